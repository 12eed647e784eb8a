"""Helpers for testing LLM pipelines: stream builders, marbles, a fake LLM server.

- `builders`: OpenAI-format chunks and whole streams (`ChatStream`) as SSE lines or bytes;
- `marbles`: `StreamMarbles` and a small vocabulary (`text`, `tool`, `usage`, `DONE`, ...)
  so a pipeline test reads as a marble diagram;
- `server`: `FakeLLMServer`, a real HTTP server on 127.0.0.1 playing scripted `Scenario`s;
- `redis_server`: `RedisServer`, a real `redis-server` on 127.0.0.1 for a test;
- `plugin`: the pytest plugin (fixtures `fake_llm_server`, `stream_marbles`, `redis_server`).
"""

from .builders import ChatStream
from .marbles import StreamMarbles
from .redis_server import RedisServer
from .server import FakeLLMServer, Scenario

__all__ = ["ChatStream", "FakeLLMServer", "RedisServer", "Scenario", "StreamMarbles"]
