"""The speed shortcuts of writing: Anthropic's text_delta template and `event_text`'s
one-line event give exactly what the plain path writes, for any text."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from rxstream.core.dialects.anthropic import AnthropicRenderer
from rxstream.core.sse import event_lines, event_text
from rxstream.models import Delta, Finish, TextDelta, ToolCallDelta
from tests.support.fast import fast_paths_as

texts = st.text(min_size=1, max_size=40)


def written(deltas: list[Delta], *, on: bool) -> list[tuple[str, str]]:
    """What `AnthropicRenderer` writes for `deltas` (made with the fast paths on or off)."""
    with fast_paths_as(on):
        renderer = AnthropicRenderer()
    frames = [f for d in deltas for f in renderer.feed(d)] + renderer.close()
    return [(getattr(f, "event", ""), getattr(f, "data", "")) for f in frames]


@given(st.lists(texts, min_size=1, max_size=4), st.lists(texts, min_size=1, max_size=3))
def test_the_text_template_writes_what_dumps_writes(first: list[str], second: list[str]) -> None:
    # Text, a tool call, text again: the second text block has another index, and
    # another template.
    deltas: list[Delta] = [TextDelta(t) for t in first]
    deltas += [ToolCallDelta(0, '{"q": 1}', id="c1", name="f")]
    deltas += [TextDelta(t) for t in second] + [Finish("stop")]
    plain, templated = written(deltas, on=False), written(deltas, on=True)
    assert templated == plain
    texts_written = [
        json.loads(data)["delta"]["text"]
        for event, data in templated
        if event == "content_block_delta" and '"text_delta"' in data
    ]
    assert texts_written == first + second


def test_the_template_holds_text_that_looks_like_its_mark_or_json() -> None:
    odd = ["\x00rxstream-text\x00", '"}', "\\u0000", "\u2028", "🙂", "\ud800"]
    deltas: list[Delta] = [TextDelta(t) for t in odd]
    assert written(deltas, on=True) == written(deltas, on=False)


fields = st.one_of(st.none(), st.text(alphabet=st.characters(blacklist_characters="\r\n")))


@given(st.text(), fields, st.one_of(st.none(), st.from_regex(r"[0-9a-z-]{0,8}", fullmatch=True)))
def test_event_text_is_event_lines_joined(data: str, event: str | None, id: str | None) -> None:
    assert (
        event_text(data, event=event, id=id)
        == "\n".join(event_lines(data, event=event, id=id)) + "\n"
    )
