"""The `"anthropic"` dialect: reading the fields of events and blocks (each type checked)."""

from __future__ import annotations

from ....models import (
    Citation,
    JSONObject,
    Usage,
)
from .._base import (
    ShapeError,
    opt_int,
    opt_object,
    opt_str,
    usage,
)


def _index(payload: JSONObject) -> int:
    index = payload.get("index")
    if type(index) is not int:
        raise ShapeError("index", "an integer", index)
    return index


def _required_str(delta: JSONObject, key: str) -> str:
    value = delta.get(key)
    if type(value) is not str:
        raise ShapeError(f"delta.{key}", "a string", value)
    return value


def _check_usage(obj: JSONObject, path: str) -> None:
    for key in ("input_tokens", "output_tokens", "cache_creation_input_tokens"):
        opt_int(obj, key, path)
    opt_int(obj, "cache_read_input_tokens", path)
    details = opt_object(obj, "output_tokens_details", path)
    if details is not None:
        opt_int(details, "thinking_tokens", f"{path}.output_tokens_details")


def _usage_of(merged: JSONObject) -> Usage:
    read = merged.get("cache_read_input_tokens")
    written = merged.get("cache_creation_input_tokens")
    # Anthropic's `input_tokens` are the ones after the last cache breakpoint only:
    # the prompt is all three (as every other dialect counts it).
    prompt = (merged.get("input_tokens") or 0) + (written or 0) + (read or 0)
    details = merged.get("output_tokens_details")
    thinking = details.get("thinking_tokens") if isinstance(details, dict) else None
    return usage(
        prompt,
        merged.get("output_tokens") or 0,
        reasoning=thinking,
        cached=read,
        cache_write=written,
        raw=dict(merged),
    )


def _citations(block: JSONObject) -> list[JSONObject]:
    given = block.get("citations")
    if given is None:
        return []
    if type(given) is not list:
        raise ShapeError("content_block.citations", "an array", given)
    for n, citation in enumerate(given):
        if type(citation) is not dict:
            raise ShapeError(f"content_block.citations[{n}]", "an object", citation)
        _citation_fields(citation, f"content_block.citations[{n}]")
    return list(given)


def _citation_fields(citation: JSONObject, path: str) -> None:
    if opt_str(citation, "type", path) is None:
        raise ShapeError(f"{path}.type", "a string", citation.get("type"))
    for key in ("url", "source", "title", "document_title", "cited_text"):
        opt_str(citation, key, path)


def _citation(citation: JSONObject, start: int, end: int) -> Citation:
    return Citation(
        citation["type"],
        url=citation.get("url") or citation.get("source"),
        title=citation.get("title") or citation.get("document_title"),
        text=citation.get("cited_text"),
        start=start,
        end=end,
        raw=citation,
        whole_block=True,
    )
