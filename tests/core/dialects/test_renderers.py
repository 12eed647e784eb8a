"""Every dialect's renderer keeps the `Renderer` protocol, and `wire_bytes` ends lines as it says.

`RENDERERS` is typed `dict[str, type[Renderer]]`: `mypy tests` (run by CI)
fails when a renderer's `feed`/`close`/`error`, `wire` or `newline` drift from
the protocol. The tests check at run time that `renderer(name)` builds these
classes and that the bytes `wire_bytes` makes end every line with the
renderer's `newline`.
"""

from __future__ import annotations

import pytest

from rxstream.core.dialects import DIALECTS, Renderer, Wire, renderer, wire_bytes
from rxstream.core.dialects.anthropic import AnthropicRenderer
from rxstream.core.dialects.bedrock import BedrockRenderer
from rxstream.core.dialects.cohere import CohereRenderer
from rxstream.core.dialects.gemini import GeminiRenderer
from rxstream.core.dialects.ollama import OllamaRenderer
from rxstream.core.dialects.openai_chat import OpenAIChatRenderer
from rxstream.core.dialects.openai_responses import ResponsesRenderer
from rxstream.core.eventstream import EventStreamParser
from rxstream.models import EventStreamMessage, Finish, SSEFrame, TextDelta

RENDERERS: dict[str, type[Renderer]] = {
    "openai-chat": OpenAIChatRenderer,
    "openai-responses": ResponsesRenderer,
    "anthropic": AnthropicRenderer,
    "gemini": GeminiRenderer,
    "cohere": CohereRenderer,
    "ollama": OllamaRenderer,
    "bedrock": BedrockRenderer,
}


def rendered(r: Renderer) -> list[Wire]:
    """A short answer: one text delta and a finish, then the stream's end."""
    return r.feed(TextDelta("Hi\nthere")) + r.feed(Finish("stop")) + r.close()


def test_renderer_builds_each_dialects_class() -> None:
    assert list(RENDERERS) == list(DIALECTS)
    for name, cls in RENDERERS.items():
        assert type(renderer(name)) is cls, name


@pytest.mark.parametrize(
    ("name", "wire", "newline"),
    [
        ("openai-chat", "sse", "\n"),
        ("openai-responses", "sse", "\n"),
        ("anthropic", "sse", "\n"),
        ("gemini", "sse", "\r\n"),
        ("cohere", "sse", "\n"),
        ("ollama", "ndjson", "\n"),
        ("bedrock", "eventstream", "\n"),
    ],
)
def test_wire_kind_and_line_end(name: str, wire: str, newline: str) -> None:
    r = renderer(name)
    assert (r.wire, r.newline) == (wire, newline)
    assert (RENDERERS[name].wire, RENDERERS[name].newline) == (wire, newline)


@pytest.mark.parametrize("name", [n for n in DIALECTS if renderer(n).wire == "sse"])
def test_sse_lines_end_with_the_renderers_newline(name: str) -> None:
    r = renderer(name)
    items = rendered(r)
    assert items
    assert all(isinstance(item, SSEFrame) for item in items)
    body = wire_bytes(r, items).decode()
    # Every event ends with a blank line, and no line ends any other way.
    assert body.endswith(r.newline * 2)
    other = {"\n": "\r", "\r\n": "\n"}[r.newline]
    assert other not in body.replace(r.newline, "")
    assert body.count(r.newline * 2) == len(items)


def test_ndjson_lines_end_with_the_renderers_newline() -> None:
    r = renderer("ollama")
    items = rendered(r)
    assert items
    assert all(isinstance(item, str) and "\n" not in item for item in items)
    assert wire_bytes(r, items).decode().split(r.newline) == [*items, ""]


def test_eventstream_messages_are_framed_whole() -> None:
    r = renderer("bedrock")
    items = rendered(r)
    assert items
    assert all(isinstance(item, EventStreamMessage) for item in items)
    parser = EventStreamParser()
    assert parser.feed(wire_bytes(r, items)) + parser.close() == items
