"""The `"openai-responses"` dialect: reading the fields of events and items (each type checked)."""

from __future__ import annotations

from ....models import (
    JSON,
    Citation,
    Delta,
    JSONObject,
    Metadata,
    ServerToolCall,
    ServerToolResult,
    Usage,
)
from .._base import (
    ShapeError,
    opt_int,
    opt_list,
    opt_object,
    opt_str,
    usage,
)

#: Provider-side items: the tool name they get, and the field that holds their result.
_SERVER_ITEMS: dict[str, tuple[str, str | None]] = {
    "web_search_call": ("web_search", None),
    "file_search_call": ("file_search", "results"),
    "code_interpreter_call": ("code_interpreter", "outputs"),
    "image_generation_call": ("image_generation", "result"),
    "mcp_call": ("mcp", "output"),
    "mcp_list_tools": ("mcp_list_tools", "tools"),
    "mcp_approval_request": ("mcp_approval_request", None),
}

#: The result field of a provider-side `*_call` item of a type not listed above.
_OTHER_RESULT = "output"

#: Item fields that are bookkeeping, not a server tool's input.
_ITEM_KEYS = ("type", "id", "status")

#: A content part: (output_index, which index space, index in it).
_PartKey = tuple[int, str, int]


def _part(payload: JSONObject, which: str) -> _PartKey:
    """The key of the content part an event is about."""
    oi = payload.get("output_index")
    if type(oi) is not int:
        raise ShapeError("output_index", "an integer", oi)
    n = payload.get(which, 0)
    if type(n) is not int:
        raise ShapeError(which, "an integer", n)
    return (oi, which, n)


def _output_index(payload: JSONObject) -> int:
    oi = payload.get("output_index")
    if type(oi) is not int:
        raise ShapeError("output_index", "an integer", oi)
    return oi


def _text(payload: JSONObject, key: str) -> str:
    """A `.done` event's whole text ("" when it has none: the deltas had it all)."""
    return opt_str(payload, key, "") or ""


def _obj(payload: JSONObject, key: str, path: str) -> JSONObject:
    value = opt_object(payload, key, path)
    if value is None:
        raise ShapeError(f"{path}.{key}" if path else key, "an object", None)
    return value


def _logprobs(payload: JSONObject, path: str) -> list[Metadata]:
    value = opt_list(payload, "logprobs", path)
    return [Metadata({"logprobs": value})] if value else []


def _citation(annotation: JSONObject, path: str) -> Citation:
    """A Responses annotation (`url_citation`, `file_citation`, ...) as a `Citation`."""
    start = opt_int(annotation, "start_index", path)
    return Citation(
        opt_str(annotation, "type", path) or "annotation",
        url=opt_str(annotation, "url", path),
        title=opt_str(annotation, "title", path) or opt_str(annotation, "filename", path),
        start=start if start is not None else opt_int(annotation, "index", path),
        end=opt_int(annotation, "end_index", path),
        raw=annotation,
    )


def _server_tool(kind: str, item: JSONObject, path: str) -> list[Delta] | None:
    """A provider-side item as `ServerToolCall` (and its `ServerToolResult`); None if not one."""
    spec = _SERVER_ITEMS.get(kind)
    if spec is None:
        if not kind.endswith("_call") or not _ran_on_server(item):
            return None
        spec = (kind[: -len("_call")], _OTHER_RESULT)
    name, result_key = spec
    id = opt_str(item, "id", path)
    args = {k: v for k, v in item.items() if k not in _ITEM_KEYS and k != result_key}
    out: list[Delta] = [ServerToolCall(id, name, args, raw=item)]
    if result_key is not None and item.get(result_key) is not None:
        out.append(ServerToolResult(id, name, item[result_key], raw=item))
    return out


def is_server_item(item: JSONObject) -> bool:
    """Whether an output item is one the decoder reads as a tool the provider ran."""
    kind = item.get("type")
    if not isinstance(kind, str):
        return False
    return kind in _SERVER_ITEMS or (kind.endswith("_call") and _ran_on_server(item))


def _ran_on_server(item: JSONObject) -> bool:
    """Whether a `*_call` item of a type not listed above was run by the provider.

    The item says so where it can (`execution`, a shell's `environment`);
    otherwise a call without a `call_id` (null or `""` counts as none) has
    nothing for the client to answer.
    """
    execution = item.get("execution")
    if execution is not None:
        return bool(execution == "server")
    environment = item.get("environment")
    if type(environment) is dict:
        return bool(environment.get("type") != "local")
    return not item.get("call_id")


def _usage(response: JSONObject) -> Usage | None:
    raw = opt_object(response, "usage", "response")
    if raw is None:
        return None
    path = "response.usage"
    inputs = opt_object(raw, "input_tokens_details", path) or {}
    outputs = opt_object(raw, "output_tokens_details", path) or {}
    return usage(
        opt_int(raw, "input_tokens", path),
        opt_int(raw, "output_tokens", path),
        total=opt_int(raw, "total_tokens", path),
        reasoning=opt_int(outputs, "reasoning_tokens", f"{path}.output_tokens_details"),
        cached=opt_int(inputs, "cached_tokens", f"{path}.input_tokens_details"),
        cache_write=opt_int(inputs, "cache_write_tokens", f"{path}.input_tokens_details"),
        raw=raw,
    )


def _code(value: JSON) -> str | int | None:
    if type(value) is str or type(value) is int:
        return value
    return None
