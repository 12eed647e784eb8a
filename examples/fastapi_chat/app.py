"""The FastAPI app: start a generation into Redis, stream it back as resumable SSE.

Run it with the launcher (`python -m examples.fastapi_chat`), or under any
ASGI server with `REDIS_URL` set, as many workers as you like:

    REDIS_URL=redis://127.0.0.1:6379/0 CHAT_BASE_URL=... \\
        uvicorn examples.fastapi_chat.app:create_app --factory --workers 2

Routes:

- `POST /chat` `{"prompt": "..."}` -> `{"id", "events"}`: the generation
  starts in this worker and runs to its end there, detached from any request
  (a browser that leaves changes nothing; the worker's shutdown stores a
  `TruncatedStreamError` for the followers, who then end at once);
- `GET /chat/{id}` -> `{"id", "prompt", "worker"}` (404 once expired);
- `GET /chat/{id}/events` -> `text/event-stream` in rxstream's format, from
  Redis: after the `Last-Event-ID` header, else after `?after=`, else from
  the start; 400 for an id that is no Redis entry id, 404 for an unknown chat;
- `GET /` the page, `GET /healthz` `{"pid", "redis"}`.

Every response names the worker process that served it (`X-Worker-PID`).
Keys: `rxstream-chat:{id}` (the stream) and `rxstream-chat:{id}:meta`, both
expiring `CHAT_TTL` seconds after the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import redis.asyncio
from fastapi import FastAPI, HTTPException
from fastapi.responses import FileResponse, JSONResponse
from pydantic import BaseModel, Field
from reactivex import operators as ops
from reactivex.scheduler.eventloop import AsyncIOScheduler
from reactivex.subject import Subject
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import rxstream as rs
from rxstream.serve import SSEResponse, sse_response

from .provider import Provider

__all__ = ["ENTRY_ID", "PREFIX", "ChatRequest", "create_app"]

PREFIX = "rxstream-chat:"
#: A Redis Stream entry id, the only resume position the events route takes.
ENTRY_ID = re.compile(r"\d{1,20}-\d{1,20}")
PAGE = Path(__file__).with_name("static") / "index.html"

log = logging.getLogger("examples.fastapi_chat")


class ChatRequest(BaseModel):
    """The body of `POST /chat`."""

    prompt: str = Field(min_length=1, max_length=20_000)


class WorkerHeader:
    """ASGI middleware: every response says which worker process served it (`X-Worker-PID`).

    A plain ASGI wrapper of `send` only: it leaves `receive` alone, so the SSE
    response still sees the client's disconnect at once.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.header = (b"x-worker-pid", str(os.getpid()).encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), self.header]}
            await send(message)

        await self.app(scope, receive, sending)


class Generations:
    """The generations this worker runs: started here, each writing its Redis Stream."""

    def __init__(self, provider: Provider, client: httpx.AsyncClient, store: Any, ttl: float):
        self.provider = provider
        self.client = client
        self.store = store
        self.ttl = ttl
        self.running: set[str] = set()
        self._idle = asyncio.Event()
        self._idle.set()
        # Fails every running generation at shutdown (see `stop`).
        self._stopping: Subject[rs.Delta] = Subject()

    async def start(self, prompt: str) -> str:
        """Start answering `prompt`; return the new chat's id once its metadata is stored."""
        chat_id = secrets.token_urlsafe(12)
        meta = {"prompt": prompt, "worker": os.getpid(), "api": self.provider.api}
        # Stored first: the events route answers 404 for a chat it does not know.
        await self.store.set(f"{PREFIX}{chat_id}:meta", json.dumps(meta), ex=int(self.ttl))
        scheduler = AsyncIOScheduler(asyncio.get_running_loop())
        answer = self.provider.deltas(self.client, prompt, scheduler=scheduler)

        def ended(error: Exception | None = None) -> None:
            # Called once the end (or the error) is stored in Redis.
            self.running.discard(chat_id)
            if not self.running:
                self._idle.set()
            if error is not None:  # stored too: the browser shows it
                log.warning("generation %s failed: %s", chat_id, error)

        self.running.add(chat_id)
        self._idle.clear()
        answer.pipe(
            ops.take_until(self._stopping),
            rs.to_redis_stream(self.store, f"{PREFIX}{chat_id}", ttl=self.ttl),
        ).subscribe(on_error=ended, on_completed=ended, scheduler=scheduler)
        return chat_id

    async def stop(self, timeout: float = 5.0) -> None:
        """End every running generation with a `TruncatedStreamError` stored for its
        followers (who then stop at once), and wait until those ends are written."""
        self._stopping.on_error(
            rs.TruncatedStreamError(
                "the worker running this generation shut down before the answer was complete"
            )
        )
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._idle.wait()


def create_app() -> FastAPI:
    """The app, configured from the environment (see the package docstring).

    Raises:
        RuntimeError: `REDIS_URL` is not set.
        ValueError: an unknown `CHAT_API`.
    """
    redis_url = os.environ.get("REDIS_URL")
    if not redis_url:
        raise RuntimeError("set REDIS_URL (the launcher, python -m examples.fastapi_chat, does)")
    provider = Provider.from_env()
    ttl = float(os.environ.get("CHAT_TTL") or 3600)
    connections = int(os.environ.get("CHAT_REDIS_CONNECTIONS") or 10_000)
    cluster = os.environ.get("CHAT_REDIS_CLUSTER", "") not in ("", "0")
    state: dict[str, Any] = {}

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # The event streams of one chat share one blocked XREAD per worker, but every
        # chat followed needs its own: redis-py's asyncio pool allows 100 by default.
        store: Any
        if cluster:
            store = redis.asyncio.RedisCluster.from_url(redis_url, max_connections=connections)
        else:
            store = redis.asyncio.Redis.from_url(redis_url, max_connections=connections)
        client = httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=None))
        state["generations"] = Generations(provider, client, store, ttl)
        state["store"] = store
        try:
            yield
        finally:
            await state["generations"].stop()
            await client.aclose()
            await store.aclose()

    app = FastAPI(title="rxstream chat", lifespan=lifespan)
    app.add_middleware(WorkerHeader)

    async def known(chat_id: str) -> dict[str, Any]:
        raw = await state["store"].get(f"{PREFIX}{chat_id}:meta")
        if raw is None:
            raise HTTPException(404, f"no chat {chat_id!r} (it expired, or never existed)")
        meta: dict[str, Any] = json.loads(raw)
        return meta

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(PAGE, media_type="text/html", headers={"Cache-Control": "no-cache"})

    @app.get("/healthz")
    async def healthz() -> dict[str, Any]:
        return {"pid": os.getpid(), "redis": bool(await state["store"].ping())}

    @app.post("/chat", status_code=201)
    async def start(body: ChatRequest) -> JSONResponse:
        chat_id = await state["generations"].start(body.prompt)
        return JSONResponse(
            {"id": chat_id, "events": f"/chat/{chat_id}/events"},
            status_code=201,
            headers={"Location": f"/chat/{chat_id}"},
        )

    @app.get("/chat/{chat_id}")
    async def chat(chat_id: str) -> dict[str, Any]:
        meta = await known(chat_id)
        return {"id": chat_id, "prompt": meta["prompt"], "worker": meta["worker"]}

    @app.get("/chat/{chat_id}/events", response_class=SSEResponse)
    async def events(chat_id: str, after: str | None = None) -> SSEResponse:
        await known(chat_id)
        store = state["store"]

        def follow(last: str | None) -> rs.Observable[rs.StreamEntry]:
            # `last`: the Last-Event-ID header, else `after` (a page that reloaded).
            if last is not None and not ENTRY_ID.fullmatch(last):
                raise ValueError(f"cannot resume after {last[:80]!r}: not a Redis entry id")
            return rs.from_redis_stream(store, f"{PREFIX}{chat_id}", after=last, ids=True)

        return sse_response(follow, dialect="rxstream", after=after or None, retry=1000)

    return app
