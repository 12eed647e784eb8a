"""What a provider request asks, read from its body (and path), for the fake server's echo.

Input: a dialect's name, the request path and its decoded JSON body, as the
fake server received them. Output: an `Asked`: the model named (in the body,
or in the path for Gemini and Bedrock), the function tools offered (name and
JSON schema), which tool `tool_choice` forces or whether it forbids tools, the
last user message's text, the tool results the conversation ends with, and
the JSON Schema the answer must fit when the request asks for structured
output (OpenAI chat's `response_format`, Responses' `text.format`,
Anthropic's `output_config.format` (or the older `output_format`), Gemini's
`generationConfig.responseJsonSchema` or `responseSchema`, Cohere's
`response_format.json_schema`, Ollama's `format`, Bedrock's
`outputConfig.textFormat`, whose schema is a JSON string; a JSON mode without
a schema is `{"type": "object"}`).

Each dialect's own forms: tools as OpenAI's `{"type": "function", "function":
{...}}` (OpenAI Chat, Cohere, Ollama), the Responses API's flat function tools,
Anthropic's `input_schema`, Gemini's `functionDeclarations` (`parameters` or
`parametersJsonSchema`), Bedrock's `toolConfig.tools[].toolSpec.inputSchema.json`;
tool results as `role: "tool"` messages (OpenAI Chat, Cohere, Ollama),
`function_call_output` items (Responses), `tool_result` blocks (Anthropic),
`functionResponse` parts (Gemini), `toolResult` blocks (Bedrock), and tool parts
in `output-available` state (the AI SDK's UI messages).

Lenient by design: the server's request checks (`checks.py`) refuse what a
provider refuses; whatever they let through (or all of it, with checks off) is
read as far as it has the expected shape, never raising.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, TypeAlias
from urllib.parse import unquote

__all__ = ["Asked", "ToolSpec", "read_asked"]

JSON: TypeAlias = Any


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A function tool the request offers: its name and its parameters' JSON schema."""

    name: str
    schema: JSON


@dataclass(frozen=True, slots=True)
class Asked:
    """What one request asks for.

    Attributes:
        model: the model named (None: the request names none, as the AI SDK's).
        tools: the function tools offered, in order.
        forced: the tool `tool_choice` names (None: no tool forced).
        no_tools: `tool_choice` forbids calls (`"none"` in its dialect's form).
        prompt: the text of the last user message that has text ("" when none).
        results: the texts of the tool results the conversation ends with
            (empty: the last turn is not a tool result).
        output: the JSON Schema the answer's text must fit (None: the
            request asks for no structured output).
    """

    model: str | None = None
    tools: tuple[ToolSpec, ...] = ()
    forced: str | None = None
    no_tools: bool = False
    prompt: str = ""
    results: tuple[str, ...] = ()
    output: JSON | None = None


_PATH_MODEL = {
    "gemini": re.compile(r"/models/([^/:]+):"),
    "bedrock": re.compile(r"/model/([^/]+)/converse-stream"),
}
_TURNS_KEY = {"openai-responses": "input", "gemini": "contents"}


def read_asked(dialect: str, path: str, body: JSON) -> Asked:
    """What a request to `dialect`'s path asks for.

    Example:
        >>> asked = read_asked("anthropic", "/v1/messages", {"model": "claude-haiku-4-5",
        ...     "messages": [{"role": "user", "content": "Hi"}],
        ...     "tools": [{"name": "f", "input_schema": {"type": "object"}}]})
        >>> asked.model, [t.name for t in asked.tools], asked.prompt, asked.results
        ('claude-haiku-4-5', ['f'], 'Hi', ())
    """
    body = body if isinstance(body, dict) else {}
    turns = body.get(_TURNS_KEY.get(dialect, "messages"))
    if dialect == "openai-responses" and isinstance(turns, str):
        turns = [{"role": "user", "content": turns}]
    turns = [t for t in turns if isinstance(t, dict)] if isinstance(turns, list) else []
    forced, no_tools = _choice(dialect, body)
    return Asked(
        model=_model(dialect, path, body),
        tools=tuple(_tools(dialect, body)),
        forced=forced,
        no_tools=no_tools,
        prompt=_prompt(turns),
        results=tuple(_results(dialect, turns)),
        output=_output(dialect, body),
    )


_ANY_OBJECT = {"type": "object"}
_JSON_FORMS = ("json_schema", "json_object")


def _output(dialect: str, body: dict[str, Any]) -> JSON | None:
    """The schema the answer must fit, from `dialect`'s structured-output field (None: none)."""
    reader = _OUTPUT_READERS.get(dialect)
    return None if reader is None else reader(body)


def _openai_chat_output(body: dict[str, Any]) -> JSON | None:
    form = body.get("response_format")
    if not isinstance(form, dict) or form.get("type") not in _JSON_FORMS:
        return None
    return _get(form, "json_schema", "schema") or _ANY_OBJECT


def _responses_output(body: dict[str, Any]) -> JSON | None:
    form = _get(body, "text", "format")
    if not isinstance(form, dict) or form.get("type") not in _JSON_FORMS:
        return None
    return form.get("schema") or _ANY_OBJECT


def _anthropic_output(body: dict[str, Any]) -> JSON | None:
    form = _get(body, "output_config", "format") or body.get("output_format")
    return (form.get("schema") or _ANY_OBJECT) if isinstance(form, dict) else None


def _gemini_output(body: dict[str, Any]) -> JSON | None:
    config = body.get("generationConfig")
    config = config if isinstance(config, dict) else {}
    found = config.get("responseJsonSchema") or config.get("responseSchema")
    if found is None and config.get("responseMimeType") == "application/json":
        return _ANY_OBJECT
    return found


def _cohere_output(body: dict[str, Any]) -> JSON | None:
    form = body.get("response_format")
    if not isinstance(form, dict) or form.get("type") != "json_object":
        return None
    return form.get("json_schema") or _ANY_OBJECT


def _ollama_output(body: dict[str, Any]) -> JSON | None:
    form = body.get("format")
    if isinstance(form, dict):
        return form
    return _ANY_OBJECT if form == "json" else None


def _bedrock_output(body: dict[str, Any]) -> JSON | None:
    text = _get(body, "outputConfig", "textFormat", "structure", "jsonSchema", "schema")
    if not isinstance(text, str):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return _ANY_OBJECT


_OUTPUT_READERS = {
    "openai-chat": _openai_chat_output,
    "openai-responses": _responses_output,
    "anthropic": _anthropic_output,
    "gemini": _gemini_output,
    "cohere": _cohere_output,
    "ollama": _ollama_output,
    "bedrock": _bedrock_output,
}


def _model(dialect: str, path: str, body: dict[str, Any]) -> str | None:
    pattern = _PATH_MODEL.get(dialect)
    if pattern is not None:
        found = pattern.search(path.split("?", 1)[0])
        return unquote(found.group(1)) if found else None
    model = body.get("model")
    return model if isinstance(model, str) and model else None


def _tools(dialect: str, body: dict[str, Any]) -> list[ToolSpec]:
    if dialect == "bedrock":
        config = body.get("toolConfig")
        listed = config.get("tools") if isinstance(config, dict) else None
        return [
            ToolSpec(spec["name"], _get(spec, "inputSchema", "json"))
            for tool in _dicts(listed)
            if isinstance(spec := tool.get("toolSpec"), dict) and isinstance(spec.get("name"), str)
        ]
    out: list[ToolSpec] = []
    for tool in _dicts(body.get("tools")):
        if dialect == "gemini":
            for declared in _dicts(tool.get("functionDeclarations")):
                schema = declared.get("parametersJsonSchema", declared.get("parameters"))
                out.append(ToolSpec(declared.get("name", ""), schema))
        elif dialect == "anthropic":
            if "input_schema" in tool:  # server tools (web search, ...) have none
                out.append(ToolSpec(tool.get("name", ""), tool["input_schema"]))
        elif dialect == "openai-responses":
            if tool.get("type") == "function":
                out.append(ToolSpec(tool.get("name", ""), tool.get("parameters")))
        elif isinstance(function := tool.get("function"), dict):
            out.append(ToolSpec(function.get("name", ""), function.get("parameters")))
    return [tool for tool in out if isinstance(tool.name, str) and tool.name]


def _choice(dialect: str, body: dict[str, Any]) -> tuple[str | None, bool]:
    """(the tool `tool_choice` forces, whether it forbids calls) in `dialect`'s form."""
    if dialect == "gemini":
        config = _get(body, "toolConfig", "functionCallingConfig")
        config = config if isinstance(config, dict) else {}
        allowed = config.get("allowedFunctionNames")
        named = allowed[0] if isinstance(allowed, list) and allowed else None
        return (named if isinstance(named, str) else None), config.get("mode") == "NONE"
    if dialect == "bedrock":
        named = _get(body, "toolConfig", "toolChoice", "tool", "name")
        return (named if isinstance(named, str) else None), False
    choice = body.get("tool_choice")
    if isinstance(choice, str):
        return None, choice.lower() == "none"
    if not isinstance(choice, dict):
        return None, False
    named = choice.get("name", _get(choice, "function", "name"))
    return (named if isinstance(named, str) else None), choice.get("type") == "none"


def _prompt(turns: list[dict[str, Any]]) -> str:
    """The last user turn's own text (its text parts: not the tool results it may carry)."""
    for turn in reversed(turns):
        if turn.get("role", "user") != "user":
            continue
        content = turn.get("content", turn.get("parts"))
        if isinstance(content, str) and content:
            return content
        texts = [
            part["text"]
            for part in _dicts(content)
            if isinstance(part.get("text"), str) and part.get("type", "text") in _TEXT_PARTS
        ]
        if any(texts):
            return " ".join(text for text in texts if text)
    return ""


_TEXT_PARTS = ("text", "input_text")


def _results(dialect: str, turns: list[dict[str, Any]]) -> list[str]:
    """The tool results at the conversation's end, as text (empty: it ends otherwise)."""
    if dialect == "openai-responses":
        tail = _trailing(turns, lambda t: t.get("type") == "function_call_output")
        return [_text(t.get("output")) for t in tail]
    if dialect in ("openai-chat", "cohere", "ollama"):
        return [
            _text(t.get("content")) for t in _trailing(turns, lambda t: t.get("role") == "tool")
        ]
    if not turns:
        return []
    last = turns[-1]
    blocks = _dicts(last.get("parts" if dialect in ("gemini", "ai-sdk") else "content"))
    if dialect == "anthropic":
        return [_text(b.get("content")) for b in blocks if b.get("type") == "tool_result"]
    if dialect == "gemini":
        found = [
            b["functionResponse"] for b in blocks if isinstance(b.get("functionResponse"), dict)
        ]
        return [_text(f.get("response")) for f in found]
    if dialect == "bedrock":
        found = [b["toolResult"] for b in blocks if isinstance(b.get("toolResult"), dict)]
        return [_text(f.get("content")) for f in found]
    if dialect == "ai-sdk" and last.get("role") == "assistant":
        # A client-side tool's output goes back in the assistant's own message.
        return [_text(b.get("output")) for b in blocks if b.get("state") == "output-available"]
    return []


def _trailing(turns: list[dict[str, Any]], match: Any) -> list[dict[str, Any]]:
    tail: list[dict[str, Any]] = []
    for turn in reversed(turns):
        if not match(turn):
            break
        tail.insert(0, turn)
    return tail


def _text(content: JSON) -> str:
    """The text of a content value in any dialect's form (parts' `text`, else its JSON)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [_text(part) for part in content]
        return " ".join(text for text in texts if text)
    if isinstance(content, dict):
        for key in ("text", "json", "content", "output"):
            if key in content:
                return _text(content[key])
        if "type" in content:
            return ""  # an image or another part without text
    if content is None:
        return ""
    return json.dumps(content, ensure_ascii=False)


def _dicts(value: JSON) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _get(value: JSON, *keys: str) -> JSON:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value
