"""Request checks for `FakeLLMServer`: reject what each provider rejects, as it does.

`check_request(dialect, body)` looks at a request body sent to a dialect's
streaming path and returns a `Rejection` (the HTTP status, the provider's
message naming the field path, its error type/code/param) or None when the
provider would take it. The server answers a rejection in the provider's own
error shape (`rxstream.core.dialects.http_error`), so a client reads it back as
it reads the real one (`HTTPStatusError` carrying the provider's message).

What is checked, per dialect:

- `"openai-chat"`: `model`; `messages` present, a non-empty list of objects;
  each `role` known; `content` on system/developer/user/tool turns (an
  assistant turn may carry only `tool_calls`); every `tool_calls[].id`
  answered by a `role: "tool"` message with that `tool_call_id` before the
  next other turn; a tool message answers a preceding call.
- `"openai-responses"`: `model`; `input` text or a list; each message item's
  `role` known and its `content` present; every `function_call` has a
  `function_call_output` with its `call_id`.
- `"anthropic"`: `model`, `max_tokens`, `messages` (a non-empty list); each
  `role` `user`/`assistant`; each `content` present; every `tool_use`
  answered by a `tool_result` in the next message (when there is one).
- `"gemini"`: `contents` a non-empty list; each `role` `user`/`model` (or
  absent); each `parts` non-empty; a turn with `functionCall` parts followed
  (when anything follows) by one with as many `functionResponse` parts.
- `"cohere"`: `model`; `messages` a non-empty list; each `role` known;
  `content` on user/system/tool turns; every `tool_calls[].id` answered by a
  `role: "tool"` message with that `tool_call_id`.
- `"ollama"`: `model` only; Ollama takes any other shape (a request without
  `messages` merely loads the model).
- `"bedrock"`: `messages` a non-empty list starting with a user turn; each
  `role` `user`/`assistant`; each `content` present; every `toolUse`
  answered by a `toolResult` in the next message (when there is one).
- `"ai-sdk"` (what `useChat`'s `DefaultChatTransport` posts to `/api/chat`):
  `messages` present, a non-empty list of UI messages, each an object with a
  string `id`, a `role` `system`/`user`/`assistant` and a `parts` list, as
  the `ai` package's `validateUIMessages` (6.x) requires; the messages are
  its own (the error's `name` as the type), as a backend that validates with
  it and answers 400 with the error says them.

Kept honest: only what the real provider rejects is refused; where the
provider's behaviour is not known for sure (an empty Responses `input` list,
a conversation that ends on an Anthropic, Gemini or Bedrock tool call, Ollama's
roles), the request passes. `stream` is not checked: no provider refuses a
non-streaming request at these paths, and the server's own rule (it answers
streams only, except OpenAI chat completions) stays as it was. Messages are
the providers' wording where known (OpenAI, Anthropic, Gemini, Bedrock,
Ollama); Cohere's are close paraphrases in its `invalid request: ...` form
(see `_cohere`).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

__all__ = ["Rejection", "check_request", "minimal_body"]

JSON: TypeAlias = Any


@dataclass(frozen=True, slots=True)
class Rejection:
    """Why the provider would refuse a request, as it says so.

    Attributes:
        status: the HTTP status (400 for every check here).
        message: the provider's message, naming the field path.
        type: the provider's error type (None: the dialect's default for the status).
        code: the provider's error code, where it sends one.
        param: the offending field (OpenAI's `error.param`).
    """

    message: str
    status: int = 400
    type: str | None = None
    code: str | int | None = None
    param: str | None = None


def check_request(dialect: str, body: JSON) -> Rejection | None:
    """The provider's refusal of request `body` sent to `dialect`'s path, or None.

    Example:
        >>> check_request("anthropic", {"model": "m", "messages": []}).message
        'max_tokens: Field required'
        >>> check_request("ollama", {"model": "m"}) is None
        True
    """
    checker = _CHECKERS.get(dialect)
    if checker is None:
        return None
    if not isinstance(body, dict):
        return _not_an_object(dialect)
    return checker(body)


def minimal_body(dialect: str, text: str = "hi", *, model: str = "fake-model") -> JSON:
    """The smallest streaming request body `dialect`'s provider takes: one user turn.

    For tests that only need the server to answer (the model of Gemini and
    Bedrock goes in the path, not the body).

    Raises:
        ValueError: an unknown dialect.

    Example:
        >>> minimal_body("openai-chat")
        {'model': 'fake-model', 'stream': True, 'messages': [{'role': 'user', 'content': 'hi'}]}
        >>> check_request("anthropic", minimal_body("anthropic")) is None
        True
    """
    chat = [{"role": "user", "content": text}]
    bodies: dict[str, JSON] = {
        "openai-chat": {"model": model, "stream": True, "messages": chat},
        "openai-responses": {"model": model, "stream": True, "input": text},
        "anthropic": {"model": model, "max_tokens": 1024, "stream": True, "messages": chat},
        "gemini": {"contents": [{"role": "user", "parts": [{"text": text}]}]},
        "cohere": {"model": model, "stream": True, "messages": chat},
        "ollama": {"model": model, "messages": chat},
        "bedrock": {"messages": [{"role": "user", "content": [{"text": text}]}]},
        "ai-sdk": {
            "id": "chat-1",
            "messages": [
                {"id": "user-1", "role": "user", "parts": [{"type": "text", "text": text}]}
            ],
            "trigger": "submit-message",
        },
    }
    if dialect not in bodies:
        raise ValueError(f"no request body for dialect {dialect!r}; known: {', '.join(bodies)}")
    return bodies[dialect]


def _not_an_object(dialect: str) -> Rejection:
    if dialect in ("openai-chat", "openai-responses"):
        return Rejection(
            "We could not parse the JSON body of your request. (HINT: This likely means you "
            "aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, "
            "but what was sent was not valid JSON.",
            type="invalid_request_error",
        )
    if dialect == "anthropic":
        return Rejection("Input should be a valid dictionary or object to extract fields from")
    if dialect == "gemini":
        return Rejection("Invalid JSON payload received. Expected an object.")
    if dialect == "bedrock":
        return Rejection("Malformed input request, please reformat your input and try again.")
    if dialect == "ollama":
        return Rejection("invalid request body")
    return Rejection("invalid request: body must be a JSON object")


# --------------------------------------------------------------------------- OpenAI chat

_OPENAI_ROLES = ("system", "developer", "user", "assistant", "tool", "function")


def _openai_missing(name: str) -> Rejection:
    return Rejection(
        f"Missing required parameter: '{name}'.",
        type="invalid_request_error",
        code="missing_required_parameter",
        param=name,
    )


def _openai_chat(body: dict[str, Any]) -> Rejection | None:
    if "model" not in body:
        return Rejection("you must provide a model parameter", type="invalid_request_error")
    if "messages" not in body:
        return _openai_missing("messages")
    messages = body["messages"]
    if not isinstance(messages, list):
        return Rejection(
            f"Invalid type for 'messages': expected an array of objects, "
            f"but got {_json_kind(messages)} instead.",
            type="invalid_request_error",
            code="invalid_type",
            param="messages",
        )
    if not messages:
        return Rejection(
            "Invalid 'messages': empty array. Expected an array with minimum length 1, "
            "but got an empty array instead.",
            type="invalid_request_error",
            code="empty_array",
            param="messages",
        )
    pending: list[Any] = []  # tool call ids still waiting for their tool message
    calls_open = False  # a tool message here answers a preceding assistant turn
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            return Rejection(
                f"Invalid type for '{where}': expected an object, "
                f"but got {_json_kind(message)} instead.",
                type="invalid_request_error",
                code="invalid_type",
                param=where,
            )
        role = message.get("role")
        if role is None:
            return _openai_missing(f"{where}.role")
        if role not in _OPENAI_ROLES:
            return Rejection(
                f"Invalid value: {_quoted(role)}. Supported values are: 'system', 'assistant', "
                "'user', 'function', 'tool', and 'developer'.",
                type="invalid_request_error",
                code="invalid_value",
                param=f"{where}.role",
            )
        if role == "tool":
            if not calls_open:
                return Rejection(
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'.",
                    type="invalid_request_error",
                    param=f"messages.[{i}].role",
                )
            answered = message.get("tool_call_id")
            if answered in pending:
                pending.remove(answered)
        elif pending:
            return _openai_unanswered(i, pending)
        else:
            calls_open = False
        if "content" not in message and role != "assistant":
            return _openai_missing(f"{where}.content")
        if role == "assistant":
            calls = message.get("tool_calls") or []
            if "content" not in message and not calls and "function_call" not in message:
                return _openai_missing(f"{where}.content")
            if calls:
                pending = [c.get("id") for c in calls if isinstance(c, dict)]
                calls_open = True
    if pending:
        return _openai_unanswered(len(messages), pending)
    return None


def _openai_unanswered(i: int, pending: list[Any]) -> Rejection:
    return Rejection(
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        + ", ".join(map(str, pending)),
        type="invalid_request_error",
        param=f"messages.[{i}].role",
    )


# --------------------------------------------------------------------------- OpenAI Responses

_RESPONSES_ROLES = ("user", "assistant", "system", "developer")


def _openai_responses(body: dict[str, Any]) -> Rejection | None:
    if "model" not in body:
        return _openai_missing("model")
    items = body.get("input")
    if items is None or isinstance(items, str):
        return None  # `input` may be omitted (previous_response_id, prompt) or plain text
    if not isinstance(items, list):
        return Rejection(
            f"Invalid type for 'input': expected one of a string or array of input items, "
            f"but got {_json_kind(items)} instead.",
            type="invalid_request_error",
            code="invalid_type",
            param="input",
        )
    outputs = {
        item.get("call_id")
        for item in items
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    }
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") not in _RESPONSES_ROLES:
            return Rejection(
                f"Invalid value: {_quoted(item.get('role'))}. Supported values are: "
                "'assistant', 'system', 'developer', and 'user'.",
                type="invalid_request_error",
                code="invalid_value",
                param=f"input[{i}].role",
            )
        if kind == "message" and "content" not in item:
            return _openai_missing(f"input[{i}].content")
        if kind == "function_call" and item.get("call_id") not in outputs:
            return Rejection(
                f"No tool output found for function call {item.get('call_id')}.",
                type="invalid_request_error",
                param="input",
            )
    return None


# --------------------------------------------------------------------------- Anthropic


def _anthropic(body: dict[str, Any]) -> Rejection | None:
    for name in ("model", "max_tokens", "messages"):
        if name not in body:
            return Rejection(f"{name}: Field required", type="invalid_request_error")
    messages = body["messages"]
    if not isinstance(messages, list):
        return Rejection("messages: Input should be a valid list", type="invalid_request_error")
    if not messages:
        return Rejection("messages: at least one message is required", type="invalid_request_error")
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            return Rejection(
                f"messages.{i}: Input should be a valid dictionary",
                type="invalid_request_error",
            )
        if "role" not in message:
            return Rejection(f"messages.{i}.role: Field required", type="invalid_request_error")
        if message["role"] not in ("user", "assistant"):
            return Rejection(
                f"messages.{i}.role: Input should be 'user' or 'assistant'",
                type="invalid_request_error",
            )
        if "content" not in message:
            return Rejection(f"messages.{i}.content: Field required", type="invalid_request_error")
    for i, message in enumerate(messages[:-1]):
        asked = _block_ids(message.get("content"), "tool_use", "id")
        answered = set(_block_ids(messages[i + 1].get("content"), "tool_result", "tool_use_id"))
        missing = [id_ for id_ in asked if id_ not in answered]
        if missing:
            return Rejection(
                f"messages.{i + 1}: `tool_use` ids were found without `tool_result` blocks "
                f"immediately after: {', '.join(map(str, missing))}. Each `tool_use` block "
                "must have a corresponding `tool_result` block in the next message.",
                type="invalid_request_error",
            )
    return None


def _block_ids(content: JSON, kind: str, key: str) -> list[Any]:
    if not isinstance(content, list):
        return []
    return [b.get(key) for b in content if isinstance(b, dict) and b.get("type") == kind]


# --------------------------------------------------------------------------- Gemini


def _gemini(body: dict[str, Any]) -> Rejection | None:
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        return Rejection(
            "* GenerateContentRequest.contents: contents is not specified\n",
            type="INVALID_ARGUMENT",
        )
    for i, content in enumerate(contents):
        if not isinstance(content, dict):
            return Rejection(
                f"Invalid value at 'contents[{i}]', expected an object.",
                type="INVALID_ARGUMENT",
            )
        if content.get("role", "user") not in ("user", "model", "function"):
            return Rejection("Please use a valid role: user, model.", type="INVALID_ARGUMENT")
        parts = content.get("parts")
        if not isinstance(parts, list) or not parts:
            return Rejection(
                f"* GenerateContentRequest.contents[{i}].parts: contents.parts must not be "
                "empty.\n",
                type="INVALID_ARGUMENT",
            )
    for content, following in itertools.pairwise(contents):
        calls = _count_parts(content, "functionCall")
        if not calls:
            continue
        responses = _count_parts(following, "functionResponse")
        if not responses:
            return Rejection(
                "Please ensure that function response turn comes immediately after a "
                "function call turn.",
                type="INVALID_ARGUMENT",
            )
        if responses != calls:
            return Rejection(
                "Please ensure that the number of function response parts is equal to the "
                "number of function call parts of the function call turn.",
                type="INVALID_ARGUMENT",
            )
    return None


def _count_parts(content: dict[str, Any], key: str) -> int:
    parts = content.get("parts") or []
    return sum(1 for part in parts if isinstance(part, dict) and key in part)


# --------------------------------------------------------------------------- Cohere

_COHERE_ROLES = ("system", "user", "assistant", "tool")


# The shape and status are Cohere's: a 400 whose body is `{"message": ...}`, which the
# cohere SDK (7.x) raises as `cohere.BadRequestError` with that body (its generated
# v2 client maps 400, 401, 403, 404, 422, 429, 498, 499, 500, 501, 503 and 504 to
# their error classes, each taking any JSON body). The wording is paraphrased: neither
# the SDK (its error classes, docstrings and types hold no message text) nor anything
# else installed quotes Cohere's own validation messages, so only the `invalid
# request: ` prefix its API uses is kept, and each message says plainly what is wrong.
def _cohere(body: dict[str, Any]) -> Rejection | None:
    if "model" not in body:
        return Rejection("invalid request: model must be specified")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return Rejection("invalid request: messages must be a non-empty list")
    pending: list[Any] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            return Rejection(f"invalid request: messages[{i}] must be an object")
        role = message.get("role")
        if role not in _COHERE_ROLES:
            return Rejection(
                f"invalid request: messages[{i}].role must be one of "
                f"{', '.join(_COHERE_ROLES)}, got {role!r}"
            )
        if role == "tool":
            if message.get("tool_call_id") in pending:
                pending.remove(message.get("tool_call_id"))
        elif pending:
            return _cohere_unanswered(pending)
        if role != "assistant" and "content" not in message:
            return Rejection(f"invalid request: messages[{i}].content is required")
        if role == "assistant":
            calls = message.get("tool_calls") or []
            pending = [c.get("id") for c in calls if isinstance(c, dict)]
    if pending:
        return _cohere_unanswered(pending)
    return None


def _cohere_unanswered(pending: list[Any]) -> Rejection:
    return Rejection(
        "invalid request: all tool calls must be followed by a tool message with a matching "
        f"tool_call_id; missing: {', '.join(map(str, pending))}"
    )


# --------------------------------------------------------------------------- Ollama


def _ollama(body: dict[str, Any]) -> Rejection | None:
    if not body.get("model"):
        return Rejection("model is required")
    return None


# --------------------------------------------------------------------------- Bedrock


def _bedrock(body: dict[str, Any]) -> Rejection | None:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return Rejection(
            "A conversation must start with a user message. Try again with a conversation "
            "that starts with a user message.",
            type="ValidationException",
        )
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            return Rejection(
                "Malformed input request, please reformat your input and try again.",
                type="ValidationException",
            )
        role = message.get("role")
        if role not in ("user", "assistant"):
            return Rejection(
                f"1 validation error detected: Value {_quoted(role)} at "
                f"'messages.{i + 1}.member.role' failed to satisfy constraint: Member must "
                "satisfy enum value set: [user, assistant]",
                type="ValidationException",
            )
        if "content" not in message:
            return Rejection(
                f"1 validation error detected: Value null at 'messages.{i + 1}.member.content' "
                "failed to satisfy constraint: Member must not be null",
                type="ValidationException",
            )
    if messages[0].get("role") != "user":
        return Rejection(
            "A conversation must start with a user message. Try again with a conversation "
            "that starts with a user message.",
            type="ValidationException",
        )
    for i, message in enumerate(messages[:-1]):
        asked = _bedrock_ids(message.get("content"), "toolUse")
        # A tool Bedrock ran (Nova's code interpreter) has its result in the same turn.
        answered = set(_bedrock_ids(message.get("content"), "toolResult"))
        answered.update(_bedrock_ids(messages[i + 1].get("content"), "toolResult"))
        missing = [id_ for id_ in asked if id_ not in answered]
        if missing:
            return Rejection(
                f"Expected toolResult blocks at messages.{i + 1}.content for the following "
                f"Ids: {', '.join(map(str, missing))}",
                type="ValidationException",
            )
    return None


def _bedrock_ids(content: JSON, kind: str) -> list[Any]:
    if not isinstance(content, list):
        return []
    return [
        block[kind].get("toolUseId")
        for block in content
        if isinstance(block, dict) and isinstance(block.get(kind), dict)
    ]


# --------------------------------------------------------------------------- AI SDK

# The wording is the `ai` package's (6.x): `validateUIMessages` throws
# `AI_InvalidArgumentError` for absent messages and `AI_TypeValidationError`
# ("Type validation failed: Value: <the messages as JSON>.\nError message: ...")
# for the rest, with the messages of its zod schema (`uiMessagesSchema`); here the
# first problem only, with its path, where the package lists zod's issues as JSON.
_UI_ROLES = ("system", "user", "assistant")


def _ai_sdk(body: dict[str, Any]) -> Rejection | None:
    messages = body.get("messages")
    if messages is None:
        return Rejection(
            "Invalid argument for parameter messages: messages parameter must be provided",
            type="AI_InvalidArgumentError",
        )
    if not isinstance(messages, list):
        return _ui_invalid(messages, _expected("array", messages))
    if not messages:
        return _ui_invalid(messages, "Messages array must not be empty")
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            return _ui_invalid(messages, _expected("object", message), where)
        if not isinstance(message.get("id"), str):
            return _ui_invalid(messages, _expected("string", message, "id"), f"{where}.id")
        if message.get("role") not in _UI_ROLES:
            return _ui_invalid(
                messages,
                'Invalid option: expected one of "system"|"user"|"assistant"',
                f"{where}.role",
            )
        if not isinstance(message.get("parts"), list):
            return _ui_invalid(messages, _expected("array", message, "parts"), f"{where}.parts")
    return None


def _expected(kind: str, value: JSON, key: str | None = None) -> str:
    """zod's words for a value (or `value[key]`, `undefined` when absent) not of `kind`."""
    if key is None:
        return f"Invalid input: expected {kind}, received {_js_kind(value)}"
    got = _js_kind(value.get(key), missing=key not in value)
    return f"Invalid input: expected {kind}, received {got}"


def _ui_invalid(value: JSON, problem: str, path: str | None = None) -> Rejection:
    shown = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if len(shown) > 60:  # the problem after it must fit any excerpt of the message
        shown = shown[:60] + "..."
    where = f" (at {path})" if path else ""
    return Rejection(
        f"Type validation failed: Value: {shown}.\nError message: {problem}{where}",
        type="AI_TypeValidationError",
    )


def _js_kind(value: JSON, missing: bool = False) -> str:
    """What zod calls a JSON value's kind (`undefined` for a missing field)."""
    if value is None:
        return "undefined" if missing else "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


# --------------------------------------------------------------------------- helpers


def _json_kind(value: JSON) -> str:
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, dict):
        return "an object"
    if value is None:
        return "null"
    return "an array"


def _quoted(value: JSON) -> str:
    return f"'{value}'" if isinstance(value, str) else repr(value)


_CHECKERS: dict[str, Callable[[dict[str, Any]], Rejection | None]] = {
    "openai-chat": _openai_chat,
    "openai-responses": _openai_responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
    "cohere": _cohere,
    "ollama": _ollama,
    "bedrock": _bedrock,
    "ai-sdk": _ai_sdk,
}
