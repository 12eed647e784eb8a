"""The fast paths switched off give what they give switched on: same items, same errors.

Every recorded stream under tests/data runs through the pipelines
docs/concepts/architecture.md lists (SSE dialects `lines, sse_frames, decode(d)`, Ollama `lines,
decode("ollama")`, Bedrock `eventstream_frames, decode("bedrock")`, each also
with `decode()` detecting the dialect, and openai-chat's long spelling
`lines, sse_frames, decode_chunks, deltas, accumulate_message`), whole, cut at
random, truncated and with a byte flipped, with `fast_paths(True)` (with the
`fast` extra's msgspec, and without it: the standard library's shortcuts) and
with `fast_paths(False)`. The runs must agree on every item (by value and by
`repr`, which tells -0.0 from 0.0), on the error (type and message) and on
completion.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import reactivex
from hypothesis import given, settings
from hypothesis import strategies as st

import rxstream as rs
from rxstream._fast import ENV_VAR, constructor, enabled
from rxstream.core import DeltaDecoder, dialects, fast_paths
from rxstream.core.message import MessageAccumulator
from rxstream.models import TextDelta
from tests.support.fast import outcome, way
from tests.support.pipelines import Operator, Pipeline
from tests.support.pipelines import pipelines as pipelines_of

DATA = Path(__file__).parents[1] / "data"
FILES = sorted(p for p in DATA.glob("*/*.*") if p.suffix in (".sse", ".ndjson", ".eventstream"))


def _dialect_of(path: Path) -> str:
    """The dialect `decode()` picks for a recording (read with the fast paths on)."""
    body = path.read_bytes()
    front: list[Operator] = (
        [rs.eventstream_frames()]
        if path.suffix == ".eventstream"
        else [rs.lines()]
        if path.suffix == ".ndjson"
        else [rs.lines(), rs.sse_frames()]
    )
    items: list[Any] = []
    reactivex.of(body).pipe(*front).subscribe(items.append)
    for item in items:
        name = dialects.detect(item)
        if name is not None:
            return name
    raise AssertionError(f"no dialect detected in {path}")  # pragma: no cover


def pipelines(path: Path) -> dict[str, Pipeline]:
    """The pipelines a recording runs through, by name (those with a message: SSE only)."""
    return pipelines_of(_dialect_of(path), message=path.suffix == ".sse", chunks=True)


CASES = [
    pytest.param(path, name, id=f"{path.parent.name}/{path.name}:{name}")
    for path in FILES
    for name in pipelines(path)
]


def assert_same(pieces: list[bytes], pipeline: Pipeline) -> tuple[Any, ...]:
    fast = outcome(pieces, pipeline, "typed")
    plain = outcome(pieces, pipeline, "plain")
    assert fast == plain
    assert outcome(pieces, pipeline, "stdlib") == plain
    assert bool(fast[2]) != bool(fast[3])  # it ended one way or the other
    return fast


def cut(body: bytes, points: list[int]) -> list[bytes]:
    bounds = [0, *sorted(p % (len(body) + 1) for p in points), len(body)]
    return [body[a:b] for a, b in itertools.pairwise(bounds)]


@pytest.mark.parametrize(("path", "name"), CASES)
def test_whole_recordings_agree(path: Path, name: str) -> None:
    body = path.read_bytes()
    assert_same([body], pipelines(path)[name])


@pytest.mark.parametrize(("path", "name"), CASES)
@settings(max_examples=16, deadline=None)
@given(
    points=st.lists(st.integers(min_value=0, max_value=1 << 20), max_size=12),
    damage=st.sampled_from(["none", "truncate", "flip"]),
    where=st.integers(min_value=0, max_value=1 << 20),
    bit=st.integers(min_value=0, max_value=7),
)
def test_cut_and_damaged_recordings_agree(
    path: Path, name: str, points: list[int], damage: str, where: int, bit: int
) -> None:
    body = path.read_bytes()
    at = where % len(body)
    if damage == "truncate":
        body = body[:at]
    elif damage == "flip":
        body = body[:at] + bytes((body[at] ^ (1 << bit),)) + body[at + 1 :]
    assert_same(cut(body, points), pipelines(path)[name])


def test_damage_is_reported_the_same_way() -> None:
    # The property is not vacuous: a truncated chat stream fails, alike both ways.
    path = DATA / "openai" / "chat-text-usage.sse"
    body = path.read_bytes()
    first_frame = body[: body.index(b"\n\n") + 2]
    *_, errors, completed = assert_same([first_frame], pipelines(path)["long-spelling"])
    assert errors
    assert errors[0][0] == "TruncatedStreamError"
    assert not completed


def test_switched_off_the_long_spelling_calls_delta_decoder_feed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[object] = []
    original = DeltaDecoder.feed

    def feed(self: DeltaDecoder, item: Any) -> list[Any]:
        calls.append(item)  # where a breakpoint in DeltaDecoder.feed would stop
        return original(self, item)

    monkeypatch.setattr(DeltaDecoder, "feed", feed)
    path = DATA / "openai" / "chat-tool-call-single.sse"
    chain = pipelines(path)["long-spelling"]
    fast = outcome([path.read_bytes()], chain, "typed")
    assert calls == []  # fused: the chunk decoder gives the deltas itself
    plain = outcome([path.read_bytes()], chain, "plain")
    assert calls  # every chunk went through DeltaDecoder.feed
    assert fast == plain


def test_switched_off_constructors_call_the_dataclass_init(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    build = constructor(TextDelta)
    inits: list[tuple[Any, ...]] = []
    original = TextDelta.__init__

    def init(self: TextDelta, *args: Any) -> None:
        inits.append(args)
        original(self, *args)

    monkeypatch.setattr(TextDelta, "__init__", init)
    first = build("a", 0)
    assert (type(first), first.text, first.choice) == (TextDelta, "a", 0)
    assert inits == []  # on: the generated constructor, no __init__
    with way("plain"):
        second = build("a", 1)
    assert inits == [("a", 1)]  # off: the dataclass's own __init__
    assert (type(second), second.text, second.choice) == (TextDelta, "a", 1)
    inits.clear()
    build("b", 0)
    assert inits == []  # on again


def test_fast_paths_returns_the_previous_setting_and_checks_its_argument() -> None:
    assert enabled()
    assert fast_paths(False) is True
    assert not enabled()
    assert fast_paths(True) is False
    with pytest.raises(TypeError, match="True or False"):
        fast_paths(0)  # type: ignore[arg-type]


@pytest.mark.parametrize(("value", "on"), [("1", False), ("yes", False), ("0", True), ("", True)])
def test_the_environment_variable_is_read_at_import(value: str, on: bool) -> None:
    env = {**os.environ, ENV_VAR: value}
    code = "import rxstream, rxstream._fast as f; print(f.enabled())"
    result = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parents[2],
    )
    assert result.stdout.strip() == str(on)


def test_share_reader_still_works_with_a_warning() -> None:
    # Roles come from the chunks' reader, given the old way or as `chunks=`.
    chunk = rs.ChatChunk({"choices": [{"index": 0, "delta": {"role": "tool", "content": "a"}}]})
    results = []
    for old in (True, False):
        decoder = DeltaDecoder()
        if old:
            acc = MessageAccumulator()
            with pytest.warns(DeprecationWarning, match=r"share_reader\(reader\) is deprecated"):
                acc.share_reader(decoder.reader)
        else:
            acc = MessageAccumulator(chunks=decoder.reader)
        for delta in decoder.feed(chunk):
            acc.feed(delta)
        results.append([(m.role, m.content) for m in acc.close()])
    assert results == [[("tool", "a")], [("tool", "a")]]
