"""Helpers for testing LLM pipelines: stream builders, marbles, a fake LLM server.

- `builders`: OpenAI-format chunks and whole streams (`ChatStream`) as SSE lines or bytes;
- `marbles`: `StreamMarbles` and a small vocabulary (`text`, `tool`, `usage`, `DONE`, ...)
  so a pipeline test reads as a marble diagram;
- `server`: `FakeLLMServer`, a real HTTP server on 127.0.0.1 playing scripted `Scenario`s;
  `FakeLLMServer.echoing()` (or `echo_answer` as a scenario) answers what each request
  asks (its model, one of its tools, its tool results), and faults (`cut:3`,
  `429:retry-after=2`, ...: `parse_fault`, `parse_faults`) script failures, per server
  or per request (the `x-rxstream-fault` header, `FAULT_HEADER`); `RunScript` plays a
  whole tool-using run whose calls depend on the results sent back (`ScriptCall`), and
  `tool_results` reads the results a recorded request carries (`SeenResult`);
- `redis_server`: `RedisServer`, a real `redis-server` on 127.0.0.1 for a test;
- `rate_limits`: `rate_limit_headers`, a provider's rate-limit headers for a fake answer
  (`Scenario(headers=...)`, `Scenario.error(429, ..., headers=...)`);
- `plugin`: the pytest plugin (fixtures `fake_llm_server`, `stream_marbles`, `redis_server`).
"""

from ._echo import echo_answer
from ._faults import FAULT_HEADER, FAULT_SYNTAX, Fault, parse_fault, parse_faults
from ._run_script import RunScript, ScriptCall, SeenResult, SeenResults, tool_results
from .builders import ChatStream
from .marbles import StreamMarbles
from .rate_limits import rate_limit_headers
from .redis_server import RedisServer
from .server import FakeLLMServer, Scenario

__all__ = [
    "FAULT_HEADER",
    "FAULT_SYNTAX",
    "ChatStream",
    "FakeLLMServer",
    "Fault",
    "RedisServer",
    "RunScript",
    "Scenario",
    "ScriptCall",
    "SeenResult",
    "SeenResults",
    "StreamMarbles",
    "echo_answer",
    "parse_fault",
    "parse_faults",
    "rate_limit_headers",
    "tool_results",
]
