"""The FastAPI app: useChat's `POST /api/chat`, and its resume route, over Redis Streams.

Run it with the launcher (`python -m examples.ai_sdk_chat`), or under any ASGI
server with `REDIS_URL` set, as many workers as you like:

    REDIS_URL=redis://127.0.0.1:6379/0 CHAT_BASE_URL=... \\
        uvicorn examples.ai_sdk_chat.app:create_app --factory --workers 2

Keys: `rxstream-ai-chat:{chat id}:{message id}` (an answer's stream, expiring
`CHAT_TTL` seconds after its end) and `rxstream-ai-chat:{chat id}:active` (the
answer that runs now: its stream key and message id; deleted at its end).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
from collections.abc import AsyncIterator
from typing import Any

import httpx
import redis.asyncio
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import Response
from reactivex import operators as ops
from reactivex.scheduler.eventloop import AsyncIOScheduler
from reactivex.subject import Subject

import rxstream as rs
from examples.fastapi_chat.provider import Provider
from rxstream.serve import SSEResponse, sse_response

__all__ = ["PREFIX", "create_app", "prompt_of"]

PREFIX = "rxstream-ai-chat:"

log = logging.getLogger("examples.ai_sdk_chat")

# Ends the active marker only if it still names this answer (a newer one may have replaced it).
_END_ACTIVE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def prompt_of(body: Any) -> str:
    """The text of the last user message of useChat's request body.

    Raises:
        ValueError: the body holds no user message with text.
    """
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list):
        raise ValueError("the body must be useChat's request: an object with 'messages'")
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            parts = message.get("parts") or []
            text = "".join(
                part.get("text", "")
                for part in parts
                if isinstance(part, dict) and part.get("type") == "text"
            )
            if text.strip():
                return text
    raise ValueError("the messages hold no user message with text")


class Answers:
    """The answers this worker runs: each written to its Redis Stream, to its end."""

    def __init__(self, provider: Provider, client: httpx.AsyncClient, store: Any, ttl: float):
        self.provider = provider
        self.client = client
        self.store = store
        self.ttl = ttl
        self.running: set[asyncio.Task[Any]] = set()
        self._stopping: Subject[rs.Delta] = Subject()

    async def start(self, chat_id: str, prompt: str) -> tuple[str, str]:
        """Start answering `prompt` in chat `chat_id`; return (stream key, message id)."""
        message_id = f"msg-{secrets.token_urlsafe(12)}"
        key = f"{PREFIX}{chat_id}:{message_id}"
        active = json.dumps({"stream": key, "messageId": message_id})
        # Marked first: a page that reloads at once finds the answer to resume.
        await self.store.set(f"{PREFIX}{chat_id}:active", active, ex=int(self.ttl))
        loop = asyncio.get_running_loop()
        scheduler = AsyncIOScheduler(loop)
        answer = self.provider.deltas(self.client, prompt, scheduler=scheduler)

        def ended(error: Exception | None = None) -> None:
            # Called once the end (or the error) is stored in Redis: nothing runs any more.
            if error is not None:
                log.warning("answer %s failed: %s", key, error)
            task = loop.create_task(
                self.store.eval(_END_ACTIVE, 1, f"{PREFIX}{chat_id}:active", active)
            )
            self.running.add(task)
            task.add_done_callback(self.running.discard)

        answer.pipe(
            ops.take_until(self._stopping),
            rs.to_redis_stream(self.store, key, ttl=self.ttl),
        ).subscribe(on_error=ended, on_completed=ended, scheduler=scheduler)
        return key, message_id

    async def stop(self) -> None:
        """End every running answer with a `TruncatedStreamError` stored for its readers."""
        self._stopping.on_error(
            rs.TruncatedStreamError(
                "the worker running this answer shut down before the answer was complete"
            )
        )
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(5):
                while self.running:
                    await asyncio.gather(*self.running, return_exceptions=True)


def create_app() -> FastAPI:
    """The app, configured from the environment (see the package docstring).

    Raises:
        RuntimeError: `REDIS_URL` is not set.
        ValueError: an unknown `CHAT_API`.
    """
    redis_url = os.environ.get("REDIS_URL")
    if not redis_url:
        raise RuntimeError("set REDIS_URL (the launcher, python -m examples.ai_sdk_chat, does)")
    provider = Provider.from_env()
    ttl = float(os.environ.get("CHAT_TTL") or 3600)
    state: dict[str, Any] = {}

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        store = redis.asyncio.Redis.from_url(redis_url, max_connections=10_000)
        client = httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=None))
        state["answers"] = Answers(provider, client, store, ttl)
        state["store"] = store
        try:
            yield
        finally:
            await state["answers"].stop()
            await client.aclose()
            await store.aclose()

    app = FastAPI(title="rxstream useChat backend", lifespan=lifespan)

    def replay(key: str, message_id: str) -> SSEResponse:
        # The whole answer from its start, with its own messageId: what the client expects
        # of a resumed stream as much as of the first one.
        answer = rs.from_redis_stream(state["store"], key)
        return sse_response(answer, dialect="ai-sdk", id=message_id)

    @app.get("/healthz")
    async def healthz() -> dict[str, Any]:
        return {"pid": os.getpid(), "redis": bool(await state["store"].ping())}

    @app.post("/api/chat", response_class=SSEResponse)
    async def chat(request: Request) -> SSEResponse:
        body = await request.json()
        chat_id = body.get("id") if isinstance(body, dict) else None
        if not isinstance(chat_id, str) or not chat_id:
            raise HTTPException(400, "the body must name its chat ('id')")
        try:
            prompt = prompt_of(body)
        except ValueError as exc:
            raise HTTPException(400, str(exc)) from None
        key, message_id = await state["answers"].start(chat_id, prompt)
        return replay(key, message_id)

    @app.get("/api/chat/{chat_id}/stream", response_model=None)
    async def resume(chat_id: str) -> Response:
        active = await state["store"].get(f"{PREFIX}{chat_id}:active")
        if active is None:
            return Response(status_code=204)  # nothing runs: the client keeps what it has
        answer = json.loads(active)
        return replay(answer["stream"], answer["messageId"])

    return app
