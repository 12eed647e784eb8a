"""Serving streams over HTTP: Starlette (and FastAPI) responses of server-sent events.

    import rxstream as rs
    from fastapi import FastAPI
    from rxstream.serve import SSEResponse, sse_response

    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def proxy(body: dict) -> SSEResponse:
        upstream = rs.from_request(client, "POST", PROVIDER_URL, json=body).pipe(
            rs.sse_frames(), rs.decode()
        )
        return sse_response(upstream, dialect="openai-chat")

(`client` is an `httpx.AsyncClient` the app keeps open; `PROVIDER_URL` the
provider's endpoint.) Needs the `serve` extra (`pip install 'rxstream[serve]'`, which brings
starlette); nothing else in rxstream imports this package.
"""

try:
    import starlette  # noqa: F401
except ImportError as exc:  # pragma: no cover - the test extra installs starlette
    raise ImportError("rxstream.serve needs starlette: pip install 'rxstream[serve]'") from exc

from .responses import DEFAULT_HEADERS, Source, SSEResponse, sse_response

__all__ = ["DEFAULT_HEADERS", "SSEResponse", "Source", "sse_response"]
