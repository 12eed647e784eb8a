"""Gemini fields read outside the decoder's loop: provider-side tool parts, finish, usage.

Pure functions over one decoded JSON object each; the decoder (`decode.py`) calls
them with its per-candidate state where a part needs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ....models import Delta, JSONObject, ServerToolCall, ServerToolResult, Usage
from .._base import CONTENT_FILTER, LENGTH, STOP, TOOL_CALLS, opt_int, opt_object, opt_str, usage

if TYPE_CHECKING:  # the decoder module imports this one
    from .decode import _Candidate

__all__ = ["FILTERED", "finish_reason", "server_parts", "usage_of", "without_id"]

#: The finish reasons that mean a safety, recitation or policy stop (`"content_filter"`).
FILTERED = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
    }
)


def server_parts(
    part: JSONObject, state: _Candidate, choice: int, where: str, out: list[Delta]
) -> None:
    """The provider-side tool items of a part: code runs and their results, built-in tools."""
    code = opt_object(part, "executableCode", where)
    if code is not None:
        call_id = opt_str(code, "id", f"{where}.executableCode")
        state.code_id = call_id
        state.code_open = True
        out.append(ServerToolCall(call_id, "code_execution", without_id(code), choice, part))
    result = opt_object(part, "codeExecutionResult", where)
    if result is not None:
        call_id = opt_str(result, "id", f"{where}.codeExecutionResult")
        state.code_open = False
        out.append(
            ServerToolResult(
                call_id if call_id is not None else state.code_id,
                "code_execution",
                without_id(result),
                choice,
                part,
            )
        )
    tool = opt_object(part, "toolCall", where)
    if tool is not None:
        out.append(
            ServerToolCall(
                opt_str(tool, "id", f"{where}.toolCall"),
                opt_str(tool, "toolType", f"{where}.toolCall") or "tool",
                tool.get("args"),
                choice,
                part,
            )
        )
    response = opt_object(part, "toolResponse", where)
    if response is not None:
        out.append(
            ServerToolResult(
                opt_str(response, "id", f"{where}.toolResponse"),
                opt_str(response, "toolType", f"{where}.toolResponse") or "tool",
                response.get("response"),
                choice,
                part,
            )
        )


def without_id(obj: JSONObject) -> JSONObject:
    """The object without its `id` member (the id travels on the item itself)."""
    return {k: v for k, v in obj.items() if k != "id"} if "id" in obj else obj


def finish_reason(reason: str, asked_for_calls: bool) -> str:
    """The normalised finish of a Gemini `finishReason` (`STOP` with calls is `tool_calls`)."""
    if reason == "STOP":
        return TOOL_CALLS if asked_for_calls else STOP
    if reason == "MAX_TOKENS":
        return LENGTH
    if reason in FILTERED:
        return CONTENT_FILTER
    return reason


def usage_of(counts: JSONObject) -> Usage:
    """`Usage` of a `usageMetadata` (tool-use prompt tokens are input; thoughts are output)."""
    where = "usageMetadata"
    prompt = opt_int(counts, "promptTokenCount", where)
    tool_use = opt_int(counts, "toolUsePromptTokenCount", where)
    candidates = opt_int(counts, "candidatesTokenCount", where)
    thoughts = opt_int(counts, "thoughtsTokenCount", where)
    return usage(
        (prompt or 0) + (tool_use or 0),
        (candidates or 0) + (thoughts or 0),
        total=opt_int(counts, "totalTokenCount", where),
        reasoning=thoughts,
        cached=opt_int(counts, "cachedContentTokenCount", where),
        raw=counts,
    )
