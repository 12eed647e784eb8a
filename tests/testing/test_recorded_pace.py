"""`Scenario.from_stream` plays a `--log` recording at the recorded pace (issue 21,
deliverable 4): the `: t=` stamps become the waits between events, `speed=` scales
them, `delay=` replaces them, and the client gets the provider's bytes without them.

The waits are checked as numbers; one test measures them at the client, loosely
(a lower bound with a margin: a loaded machine is only ever slower).
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

import rxstream as rs
from rxstream.cli._wire import StreamLog
from rxstream.models import SSEFrame
from rxstream.testing.builders import ChatStream
from rxstream.testing.checks import minimal_body
from rxstream.testing.server import FakeLLMServer, Raw, Scenario

#: When each event of ANSWER arrived, in seconds after the request.
TIMES = [0.15, 0.3, 0.3, 0.45, 0.6, 0.6]
ANSWER = ChatStream().role().text("Hel", "lo").finish().usage(3, 2).done()
#: How much earlier than recorded an event may be seen (clock granularity, nothing more).
MARGIN = 0.03


def recording(path: Path, times: list[float] = TIMES) -> str:
    """ANSWER as `rxstream chat --log` writes it, each event stamped with its time."""
    log = StreamLog(str(path), "sse")
    for frame, at in zip(ANSWER.frames(), times, strict=True):
        log.write(frame, at)
    log.close()
    return path.read_text(encoding="utf-8")


def waits(scenario: Scenario) -> list[float]:
    return [round(step.delay, 6) for step in scenario.steps]


def sent(scenario: Scenario) -> str:
    """What the steps send (all `Raw` text here)."""
    data = [step.data for step in scenario.steps if isinstance(step, Raw)]
    assert len(data) == len(scenario.steps)
    return "".join(piece for piece in data if isinstance(piece, str))


def test_the_stamps_are_the_waits_between_events(tmp_path: Path) -> None:
    scenario = Scenario.from_stream(recording(tmp_path / "answer.sse"))
    assert waits(scenario) == [0.15, 0.15, 0.0, 0.15, 0.15, 0.0]
    # The provider's bytes, without the stamps the log added.
    assert sent(scenario) == ANSWER.sse()


def test_speed_scales_the_recorded_waits_and_delay_replaces_them(tmp_path: Path) -> None:
    text = recording(tmp_path / "answer.sse")
    assert waits(Scenario.from_stream(text, speed=3)) == [0.05, 0.05, 0.0, 0.05, 0.05, 0.0]
    assert waits(Scenario.from_stream(text, speed=0.5)) == [0.3, 0.3, 0.0, 0.3, 0.3, 0.0]
    assert waits(Scenario.from_stream(text, delay=0.01)) == [0.01] * 6
    assert waits(Scenario.from_stream(text).paced(0.02, first=0.1)) == [0.1] + [0.02] * 5


@pytest.mark.parametrize("speed", [0, -1.0, float("nan")])
def test_a_speed_that_is_not_positive_is_refused(speed: float) -> None:
    with pytest.raises(ValueError, match=r"speed must be a positive number, got"):
        Scenario.from_stream(ANSWER.sse(), speed=speed)


def test_from_stream_takes_a_builder_or_text_only() -> None:
    with pytest.raises(TypeError, match="got bytes"):
        Scenario.from_stream(ANSWER.bytes())


def test_text_without_stamps_plays_as_before() -> None:
    assert waits(Scenario.from_stream(ANSWER.sse())) == [0.0] * 6
    assert waits(Scenario.from_stream(ANSWER.sse(), delay=0.02)) == [0.02] * 6
    assert waits(Scenario.from_stream(ANSWER, delay=0.02)) == [0.02] * 6


def test_an_event_without_a_stamp_goes_with_the_one_before_and_time_never_runs_back() -> None:
    events = ANSWER.sse().split("\n\n")[:4]
    text = (
        f": t=0.5\n{events[0]}\n\n"
        f"{events[1]}\n\n"  # no stamp: sent with the event before
        f": t=0.2\n{events[2]}\n\n"  # earlier than the latest stamp: no wait
        f": t=0.9\n{events[3]}\n\n"
        ": t=1.0\n\n"  # a stamp alone: nothing to send
    )
    scenario = Scenario.from_stream(text)
    assert waits(scenario) == [0.5, 0.0, 0.0, 0.4]
    assert sent(scenario) == "\n\n".join(events) + "\n\n"


@pytest.mark.parametrize("speed", [1.0, 2.0])
def test_the_client_sees_the_recorded_pace(tmp_path: Path, speed: float) -> None:
    text = recording(tmp_path / "answer.sse")
    arrived: list[tuple[float, SSEFrame]] = []

    def seen(frame: SSEFrame) -> None:
        arrived.append((time.monotonic(), frame))

    scenario = Scenario.from_stream(text, speed=speed)
    with FakeLLMServer(scenario) as server, httpx.Client(timeout=10.0) as client:
        started = time.monotonic()
        source = rs.from_request(client, "POST", server.url, json=minimal_body("openai-chat"))
        source.pipe(rs.sse_frames()).subscribe(seen)
    assert [frame for _, frame in arrived] == ANSWER.frames()
    # Each event no earlier than its recorded time (scaled), less a margin for the
    # clock; later is only what a busy machine does, so there is no upper bound.
    for (at, _), recorded in zip(arrived, TIMES, strict=True):
        assert at - started >= recorded / speed - MARGIN, (at - started, recorded)
