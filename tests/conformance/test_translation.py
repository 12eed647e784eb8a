"""The 7 x 7 matrix: every recorded stream, rendered into every dialect, read by its SDK.

Each fixture in tests/data is decoded from its own dialect by rxstream, then
written into each of the seven dialects: with `rs.to_sse` for the five that
stream SSE (its numbered `id:`s on, a keep-alive after every event), with the
dialect's renderer for Ollama (NDJSON) and Bedrock (AWS event stream). The
bytes are served on 127.0.0.1 and read by the target's official SDK. Two
things must hold:

1. the SDK gets what rxstream's own reading of the same bytes gives (text,
   reasoning, client tool calls with parsed arguments, usage, finish), and it
   raises exactly when rxstream does (a provider error, a cut source);
2. nothing of the source is lost on the way but what the target cannot carry,
   by the rules the renderers document (`DROPPED` below): the text, the
   reasoning and the client tool calls of the source arrive.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import reactivex
from reactivex import operators as ops

import rxstream as rs
from rxstream.core import dialects
from rxstream.core.dialects.sse_encoder import SSEEncoder
from rxstream.core.tools import is_generated_call_id
from rxstream.testing.server import FakeLLMServer, Raw, Scenario
from tests.support.conformance_readers import (
    DIALECTS,
    Answer,
    Read,
    arguments,
    chunks,
    rxstream_read,
    sdk_read,
)

from .conftest import root

DATA = Path(__file__).parent.parent / "data"
FIXTURES = sorted(
    path.relative_to(DATA).as_posix()
    for path in DATA.rglob("*")
    if path.suffix in (".sse", ".ndjson", ".eventstream")
)


def source_items(fixture: str) -> tuple[list[rs.Delta], Exception | None]:
    """rxstream's reading of a fixture in its own dialect (auto-detected): deltas, error."""
    path = DATA / fixture
    match path.suffix:
        case ".eventstream":
            frames: list[Any] = [rs.eventstream_frames()]
        case ".ndjson":
            frames = [rs.lines()]
        case _:
            frames = [rs.lines(), rs.sse_frames()]
    deltas: list[rs.Delta] = []
    failure: list[Exception] = []
    source: reactivex.Observable[Any] = reactivex.of(path.read_bytes())
    for operator in frames:
        source = operator(source)
    rs.decode()(source).subscribe(on_next=deltas.append, on_error=failure.append)
    return deltas, failure[0] if failure else None


def rendered(target: str, deltas: list[rs.Delta], error: Exception | None) -> bytes:
    """The bytes a server built on rxstream sends for `deltas` (then `error`) in `target`."""
    if target in ("ollama", "bedrock"):
        renderer = dialects.renderer(target)
        items: list[Any] = []
        for delta in deltas:
            items += renderer.feed(delta)
        if error is None:
            items += renderer.close()
        else:
            items += renderer.error(_as_provider_error(error))
        return dialects.wire_bytes(renderer, items)
    source: reactivex.Observable[Any] = reactivex.from_iterable(deltas)
    if error is not None:
        source = source.pipe(ops.concat(reactivex.throw(error)))
    events: list[bytes] = source.pipe(rs.to_sse(target, keepalive=None), ops.to_list()).run()
    keepalive = SSEEncoder(target).keepalive()
    # A keep-alive after every event: the worst a long pause can do.
    return b"".join(event + keepalive for event in events)


def _as_provider_error(error: Exception) -> rs.ProviderError:
    if isinstance(error, rs.ProviderError):
        return error
    return rs.ProviderError(str(error), type=type(error).__name__)


def source_answer(deltas: list[rs.Delta]) -> Answer:
    messages: list[rs.Message] = []
    reactivex.from_iterable(deltas).pipe(rs.accumulate_message()).subscribe(on_next=messages.append)
    answer = Answer()
    for message in messages:
        if message.choice == 0:
            answer.text, answer.reasoning = message.content, message.reasoning
            answer.calls = [(c.id, c.name, arguments(c.arguments)) for c in message.tool_calls]
    return answer


def kept_calls(
    target: str, calls: list[tuple[str | None, str | None, Any]]
) -> list[tuple[str | None, Any]]:
    """The client calls (name, arguments) a target carries, by the renderers' documented rules."""
    if target in ("ollama", "gemini"):
        # Their arguments are JSON objects: a call with other arguments is left out.
        return [(name, args) for _, name, args in calls if isinstance(args, dict)]
    return [(name, args) for _, name, args in calls]


@pytest.fixture(scope="module")
def sources() -> dict[str, tuple[list[rs.Delta], Exception | None]]:
    return {fixture: source_items(fixture) for fixture in FIXTURES}


def test_every_fixture_is_in_the_matrix() -> None:
    assert len(FIXTURES) >= 50
    assert {Path(f).suffix for f in FIXTURES} == {".sse", ".ndjson", ".eventstream"}


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("fixture", FIXTURES)
def test_the_target_sdk_reads_the_translation(
    server: FakeLLMServer,
    sources: dict[str, tuple[list[rs.Delta], Exception | None]],
    fixture: str,
    target: str,
) -> None:
    deltas, error = sources[fixture]
    body = rendered(target, deltas, error)
    server.serve(Scenario(steps=tuple(Raw(piece) for piece in chunks(body, 512))))
    mine = rxstream_read(target, body)
    got = sdk_read(target, root(server))

    # 1. The SDK reads what rxstream reads, and fails where rxstream does.
    if error is None:
        assert mine.error is None, f"rxstream cannot read its own {target} rendering"
        assert got.error is None, f"the {target} SDK raised {got.error!r}"
        assert got.answer == _sdk_view(target, mine)
    else:
        assert mine.error is not None
        assert got.error is not None, f"the {target} SDK ended without the source's error"

    # 2. Nothing of the source is lost but what the target cannot carry.
    want = source_answer(deltas)
    assert mine.answer.text == want.text
    assert mine.answer.reasoning == want.reasoning
    assert [(n, a) for _, n, a in mine.answer.calls] == kept_calls(target, want.calls)


def _sdk_view(target: str, mine: Read) -> Answer:
    """rxstream's reading as the target's SDK shows it (what the SDK itself does differently)."""
    answer = dataclasses.replace(mine.answer)
    if target == "ollama":  # the ollama client's ToolCall model has no id field
        answer.calls = [(None, name, args) for _, name, args in answer.calls]
    if target in ("gemini", "bedrock"):
        # An id rxstream made for a call that came without one is not on the wire: Gemini's
        # rendering has none, Bedrock's an empty `toolUseId` (which the SDK shows as such).
        answer.calls = [
            (None if is_generated_call_id(id) else id, name, args)
            for id, name, args in answer.calls
        ]
    if target == "anthropic":
        # messages.stream() parses tool input in jiter's partial mode: arguments
        # cut short (a max_tokens stop) reach its users as what parses of them.
        import jiter

        answer.calls = [
            (id, name, jiter.from_json(args.encode(), partial_mode=True))
            if isinstance(args, str)
            else (id, name, args)
            for id, name, args in answer.calls
        ]
    return answer


#: Two parallel calls whose fragments alternate, as OpenAI-compatible servers send them.
INTERLEAVED: list[rs.Delta] = [
    rs.TextDelta("Checking both."),
    rs.ToolCallDelta(0, "", "call_a", "get_weather"),
    rs.ToolCallDelta(1, "", "call_b", "get_time"),
    rs.ToolCallDelta(0, '{"city":'),
    rs.ToolCallDelta(1, '{"tz":'),
    rs.ToolCallDelta(0, ' "Paris"}'),
    rs.ToolCallDelta(1, ' "UTC"}'),
    rs.Finish("tool_calls"),
]


@pytest.mark.parametrize("target", DIALECTS)
def test_the_target_sdk_reads_interleaved_parallel_calls(
    server: FakeLLMServer, target: str
) -> None:
    body = rendered(target, INTERLEAVED, None)
    server.serve(Scenario(steps=tuple(Raw(piece) for piece in chunks(body, 512))))
    mine = rxstream_read(target, body)
    got = sdk_read(target, root(server))
    assert mine.error is None, f"rxstream cannot read its own {target} rendering"
    assert got.error is None, f"the {target} SDK raised {got.error!r}"
    assert got.answer == _sdk_view(target, mine)
    want = source_answer(INTERLEAVED)
    assert [(n, a) for _, n, a in mine.answer.calls] == kept_calls(target, want.calls)
    assert len(mine.answer.calls) == 2


#: An answer cut in a tool call's arguments, a `Reset`, then the new answer.
RESTARTED: list[rs.Delta] = [
    rs.ReasoningDelta("Let me see."),
    rs.TextDelta("Checking"),
    rs.ToolCallDelta(0, '{"city":', "call_a", "get_weather"),
    rs.Reset(2, "the connection closed"),
    rs.TextDelta("Checking the weather."),
    rs.ToolCallDelta(0, '{"city": "Paris"}', "call_b", "get_weather"),
    rs.Finish("tool_calls"),
    rs.Usage(10, 5, 15),
]


@pytest.mark.parametrize("target", DIALECTS)
def test_the_target_sdk_reads_a_restarted_answer(server: FakeLLMServer, target: str) -> None:
    """A provider's dialect cannot carry a `Reset`: `ResetRule` keeps the stream valid."""
    body = rendered(target, RESTARTED, None)
    server.serve(Scenario(steps=tuple(Raw(piece) for piece in chunks(body, 512))))
    mine = rxstream_read(target, body)
    got = sdk_read(target, root(server))
    assert mine.error is None, f"rxstream cannot read its own {target} rendering"
    assert got.error is None, f"the {target} SDK raised {got.error!r}"
    assert got.answer == _sdk_view(target, mine)
    # What was sent stays, the new answer follows; its call is whole and never spliced.
    assert mine.answer.text == "CheckingChecking the weather."
    assert mine.answer.calls[-1][1:] == ("get_weather", {"city": "Paris"})
    assert all(args in ('{"city":', {"city": "Paris"}) for _, _, args in mine.answer.calls)
