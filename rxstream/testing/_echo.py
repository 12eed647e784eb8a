"""The fake server's listening answer: an answer made from the request it answers.

`echo_answer(request)` reads the request in its dialect (`_asked.read_asked`)
and answers, in that dialect (every step a dialect-neutral `Say`):

- the model the request names, wherever the dialect's stream reports one
  (OpenAI's `model`, Anthropic's `message_start`, Gemini's `modelVersion`,
  Ollama's `model`; Cohere's, Bedrock's and the AI SDK's streams name none);
- a conversation that ends with tool results: a final text quoting them
  (`The tool returned: ...`), finish `stop` (or, when the request asks for
  structured output, the JSON answer below);
- else, a request that offers tools (and does not forbid calls): one call of
  one of them (the one `tool_choice` forces, else the one whose name's words
  the last user message has most of, else the first), its arguments a value of the
  tool's own JSON schema (`_schema_values.schema_value`), finish `tool_calls`;
- else, a request that asks for structured output (`Asked.output`, from the
  dialect's own field): a JSON answer that fits the schema
  (`_schema_values.schema_value`), sent compactly as text in a few pieces,
  finish `stop`;
- else a short text quoting the last user message (`You said: "..."`).

Then usage (rough counts: a token per four bytes of the request, one per piece
sent). The same request always gets the same answer.
"""

from __future__ import annotations

import json
import re
import zlib

from ..models import Delta, Finish, TextDelta, ToolCallDelta, Usage
from ._asked import Asked, ToolSpec, read_asked
from ._routes import route
from ._scenario import RecordedRequest, Scenario
from ._schema_values import schema_value

__all__ = ["echo_answer"]

#: How much of the user's message or a tool's result the answer quotes.
QUOTE = 80


def echo_answer(request: RecordedRequest, *, delay: float = 0.0) -> Scenario:
    """The answer that listens to `request` (see the module's docstring), `delay` s per step.

    A `FakeLLMServer` takes it in place of a `Scenario` (it is called with each
    request): `FakeLLMServer(echo_answer)`, or `FakeLLMServer.echoing()`;
    `functools.partial(echo_answer, delay=0.05)` paces it.

    Example:
        >>> body = {"model": "gpt-4o-mini", "stream": True,
        ...         "messages": [{"role": "user", "content": "Hi there"}]}
        >>> request = RecordedRequest("POST", "/v1/chat/completions", {}, b"", body)
        >>> scenario = echo_answer(request)
        >>> scenario.model, scenario.answer_text()
        ('gpt-4o-mini', 'You said: "Hi there"')
    """
    dialect = route(request.path, request.json) or "openai-chat"
    asked = read_asked(dialect, request.path, request.json)
    tool = None if asked.results or asked.no_tools else _chosen(asked)
    if asked.results and asked.output is not None:
        deltas = [*_json_text(asked.output), Finish("stop")]
    elif asked.results:
        plural = "s" if len(asked.results) > 1 else ""
        quoted = "; ".join(_quote(result) for result in asked.results)
        deltas = [*_text(f"The tool{plural} returned: {quoted}"), Finish("stop")]
    elif tool is not None:
        deltas = [*_call(tool, request.body), Finish("tool_calls")]
    elif asked.output is not None:
        deltas = [*_json_text(asked.output), Finish("stop")]
    else:
        said = f'You said: "{_quote(asked.prompt)}"' if asked.prompt else "Hello!"
        deltas = [*_text(said), Finish("stop")]
    prompt = max(1, len(request.body) // 4)
    deltas.append(Usage(prompt, len(deltas) - 1, prompt + len(deltas) - 1))
    scenario = Scenario.answer(*deltas)
    if delay:
        scenario = scenario.paced(delay)
    return Scenario(steps=scenario.steps, model=asked.model)


def _chosen(asked: Asked) -> ToolSpec | None:
    """The tool to call: the forced one, else the one whose name's words the prompt has
    most of (`get_weather` for "the weather in Paris?"), else the first."""
    if not asked.tools:
        return None
    by_name = {tool.name: tool for tool in asked.tools}
    if asked.forced in by_name:
        return by_name[asked.forced]
    said = set(_words(asked.prompt))
    scores = [len(said.intersection(_words(tool.name))) for tool in asked.tools]
    return asked.tools[scores.index(max(scores))]


def _words(text: str) -> list[str]:
    """Lower-case words, a name's parts too (`getWeather`, `get_weather`: get, weather)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    return [word.lower() for word in re.findall(r"[A-Za-z0-9]+", spaced)]


def _call(tool: ToolSpec, body: bytes) -> list[Delta]:
    """One call of `tool` in a few fragments (a streamed call comes in pieces)."""
    arguments = json.dumps(schema_value(tool.schema, tool.name), ensure_ascii=False)
    call_id = f"call_{zlib.crc32(body):08x}"
    size = max(1, -(-len(arguments) // 3))
    pieces = [arguments[i : i + size] for i in range(0, len(arguments), size)] or [""]
    first = ToolCallDelta(0, pieces[0], id=call_id, name=tool.name)
    return [first, *(ToolCallDelta(0, piece) for piece in pieces[1:])]


def _json_text(schema: object) -> list[Delta]:
    """A value of `schema` as compact JSON text, in a few pieces (cut anywhere, as models do)."""
    text = json.dumps(schema_value(schema, "answer"), ensure_ascii=False, separators=(",", ":"))
    size = max(1, -(-len(text) // 4))
    return [TextDelta(text[i : i + size]) for i in range(0, len(text), size)] or [TextDelta(text)]


def _text(text: str) -> list[Delta]:
    """Word-sized pieces (each keeps its leading space), as models stream."""
    return [TextDelta(piece) for piece in re.findall(r"\s*\S+", text)] or [TextDelta(text)]


def _quote(text: str) -> str:
    """`text` on one line, cut to `QUOTE` characters (an ellipsis says so)."""
    line = " ".join(text.split())
    return line if len(line) <= QUOTE else line[: QUOTE - 1] + "…"
