"""`rxstream replay FILE` in every dialect: the wire kind and the dialect told by the file itself,
every recording in tests/data to its full meaning, `--dialect`, and the logs `--log` writes
(SSE with `: t=` stamps; NDJSON and AWS event streams with a `.timing` sidecar)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from rxstream.cli._app import EXIT_ERROR, SERVED
from rxstream.cli._wire import TIMING_SUFFIX, WIRE, Recording, sniff
from rxstream.core import wire as codec
from rxstream.core.dialects import renderer
from rxstream.core.eventstream import encode_message
from rxstream.core.message import MessageAccumulator
from rxstream.core.tools import is_generated_call_id
from rxstream.models import Delta, Message, TextDelta
from tests.support.recordings import anthropic as anthropic_recordings
from tests.support.recordings import bedrock as bedrock_recordings
from tests.support.recordings import cohere as cohere_recordings
from tests.support.recordings import gemini as gemini_recordings
from tests.support.recordings import ollama as ollama_recordings
from tests.support.recordings import openai_chat as chat
from tests.support.recordings import openai_responses as openai_responses_recordings

from .conftest import Done, Run

DATA = Path(__file__).parent.parent / "data"

Check = Callable[[list[Message]], None]


def one(check: Callable[[Message], None]) -> Check:
    def run(messages: list[Message]) -> None:
        (message,) = messages
        check(message)

    return run


def n3_choices(messages: list[Message]) -> None:
    assert [m.choice for m in messages] == [0, 1, 2]
    for message, temperature in zip(messages, (65, 61, 59), strict=True):
        usage = chat.usage(79, 42, 121, 0)
        chat.check_message(message, chat.Expected(chat.N3.format(temperature), usage=usage))


def single(want: chat.Expected) -> Check:
    return one(partial(chat.check_message, want=want))


def gemini(name: str) -> Check:
    return one(partial(gemini_recordings.check_recording, name))


def responses(case: openai_responses_recordings.Recording) -> Check:
    return partial(openai_responses_recordings.check_recording, case)


def checks() -> dict[str, Check]:
    """What each recording means, as the dialect tests assert it (their tables, reused)."""
    table: dict[str, Check] = {name: single(want) for name, want in chat.SINGLE_CHOICE.items()}
    table["openai/chat-n3-choices.sse"] = n3_choices
    anthropic: Mapping[str, Callable[[Message], None]] = anthropic_recordings.RECORDINGS
    for name, check in anthropic.items():
        table[f"anthropic/{name}"] = one(check)
    table["bedrock/converse-stream-text.eventstream"] = one(bedrock_recordings.check_recording)
    cohere: Mapping[str, Callable[[Message], None]] = cohere_recordings.RECORDINGS
    for name, check in cohere.items():
        table[f"cohere/{name}"] = one(check)
    for name in gemini_recordings.RECORDINGS:
        table[f"google/{name}"] = gemini(name)
    for param in ollama_recordings.RECORDINGS:
        recording, ollama = param.values
        assert isinstance(recording, str)
        assert callable(ollama)
        table[f"ollama/{recording}"] = one(ollama)
    for case in openai_responses_recordings.RECORDINGS:
        if case.error is None:
            table[case.name] = responses(case)
    return table


CHECKS = checks()

# The recordings that end in the provider's error: (the error's type, code and message start).
ERRORS: dict[str, tuple[str | None, str | int | None, str]] = {
    "groq/error-event-tool-use-failed.sse": (
        "invalid_request_error",
        "tool_use_failed",
        "Tool call validation failed",
    ),
    "openrouter/keepalive-then-midstream-error.sse": (None, 400, "Token limit reached"),
    "openai-responses/error-event-then-response-failed.sse": (
        "insufficient_quota",
        "insufficient_quota",
        "You exceeded your current quota",
    ),
}

RECORDINGS = sorted(
    str(path.relative_to(DATA)) for path in DATA.glob("*/*") if path.name != "PROVENANCE.md"
)


def test_every_recording_has_its_meaning_here() -> None:
    assert sorted([*CHECKS, *ERRORS]) == RECORDINGS


def deltas_of(done: Done) -> list[Delta]:
    return [codec.decode(json.loads(line)) for line in done.out.splitlines()]


def accumulate(deltas: list[Delta]) -> list[Message]:
    acc = MessageAccumulator()
    for delta in deltas:
        acc.feed(delta)
    return acc.close()


@pytest.mark.parametrize("name", RECORDINGS)
def test_replay_json_gives_each_recording_its_full_meaning(rxstream: Run, name: str) -> None:
    done = rxstream("replay", str(DATA / name), "--json", "--fast")
    deltas = deltas_of(done)  # rxstream's own JSON encoding: every delta back, raw fields too
    if name in ERRORS:
        assert done.code == EXIT_ERROR
        kind, code, message = ERRORS[name]
        assert done.err.startswith("rxstream: error: provider error")
        assert message in done.err
        assert done.err.count("\n") == 1
        # The same error as the library gives, after the same deltas.
        assert kind is None or kind in done.err
        assert code is None or repr(code) in done.err or str(code) in done.err
        return
    assert done.code == 0, done.err
    assert done.err == ""
    CHECKS[name](accumulate(deltas))


def test_the_error_recordings_keep_what_came_before_the_error(rxstream: Run) -> None:
    done = rxstream("replay", str(DATA / "openrouter/keepalive-then-midstream-error.sse"))
    assert done.code == EXIT_ERROR
    assert "thinking: " in done.out  # the reasoning that streamed before the error
    assert done.footer.startswith("-- time to first token")
    assert done.err == "rxstream: error: provider error (code 400): Token limit reached\n"


def plain_finish(messages: list[Message]) -> str:
    return messages[-1].finish_reason or ""


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_replay_plain_shows_the_answer_calls_and_finish(rxstream: Run, name: str) -> None:
    messages = accumulate(deltas_of(rxstream("replay", str(DATA / name), "--json", "--fast")))
    done = rxstream("replay", str(DATA / name), "--fast")
    assert done.code == 0, done.err
    title = done.out.splitlines()[0]
    assert title.startswith(f"rxstream replay {DATA / name}: ")
    assert "(detected)" in title
    for message in messages:
        tag = f"[choice {message.choice}] " if message.choice else ""
        if message.content.strip():
            assert f"{tag}answer: " in done.out
        if message.reasoning.strip():
            assert f"{tag}thinking: " in done.out
        for call in message.tool_calls:
            assert f"{tag}tool call" in done.out
            # The replay shows the call as the wire had it: not an id rxstream made for it.
            shown = call.id if not is_generated_call_id(call.id) else None
            assert f"{call.name}{f' ({shown})' if shown else ''} " in done.out
    raw = messages[-1].finish_raw
    said = f" ({raw})" if raw and raw != plain_finish(messages) else ""
    assert f"finish: {plain_finish(messages)}{said}" in done.footer


@pytest.mark.parametrize(
    ("name", "title"),
    [
        ("anthropic/tool-use-input-json.sse", "anthropic (detected), a server-sent event stream"),
        ("google/text-crlf.sse", "gemini (detected), a server-sent event stream"),
        ("cohere/v2-text.sse", "cohere (detected), a server-sent event stream"),
        ("openai-responses/text.sse", "openai-responses (detected), a server-sent event stream"),
        ("mistral/text.sse", "openai-chat (detected), a server-sent event stream"),
        ("ollama/chat-tool-call-llama3.1.ndjson", "ollama (detected), NDJSON lines"),
        ("bedrock/converse-stream-text.eventstream", "bedrock (detected), an AWS event stream"),
    ],
)
def test_the_title_says_what_was_detected(rxstream: Run, name: str, title: str) -> None:
    done = rxstream("replay", str(DATA / name), "--fast")
    assert done.out.splitlines()[0] == f"rxstream replay {DATA / name}: {title}"


def test_server_tools_and_citations_are_shown(rxstream: Run) -> None:
    done = rxstream("replay", str(DATA / "anthropic/web-search-server-tool-citations.sse"))
    assert done.code == 0, done.err
    assert "server tool: web_search (srvtoolu_" in done.out
    assert '{"query": ' in done.out
    assert "server tool result: web_search_tool_result (srvtoolu_" in done.out
    assert " citations · finish: stop (end_turn)" in done.footer


# ----------------------------------------------------------------------------- --dialect


@pytest.mark.parametrize(
    ("name", "dialect"),
    [
        ("anthropic/tool-use-input-json.sse", "anthropic"),
        ("ollama/chat-tool-call-llama3.1.ndjson", "ollama"),
        ("bedrock/converse-stream-text.eventstream", "bedrock"),
        ("openai/chat-tool-call-single.sse", "openai-chat"),
    ],
)
def test_a_forced_dialect_gives_the_same_deltas(rxstream: Run, name: str, dialect: str) -> None:
    auto = rxstream("replay", str(DATA / name), "--json", "--fast")
    forced = rxstream("replay", str(DATA / name), "--json", "--fast", "--dialect", dialect)
    assert forced.code == auto.code == 0
    assert forced.out == auto.out
    plain = rxstream("replay", str(DATA / name), "--fast", "--dialect", dialect)
    assert plain.out.splitlines()[0].endswith(
        f": {dialect} (--dialect), "
        + {"ollama": "NDJSON lines", "bedrock": "an AWS event stream"}.get(
            dialect, "a server-sent event stream"
        )
    )


@pytest.mark.parametrize(
    ("name", "dialect", "says"),
    [
        (
            "anthropic/tool-use-input-json.sse",
            "ollama",
            "holds a server-sent event stream, but --dialect ollama reads NDJSON lines",
        ),
        (
            "ollama/chat-phi3-tail-excerpt.ndjson",
            "bedrock",
            "holds NDJSON lines, but --dialect bedrock reads an AWS event stream",
        ),
        (
            "bedrock/converse-stream-text.eventstream",
            "gemini",
            "holds an AWS event stream, but --dialect gemini reads a server-sent event stream",
        ),
        ("anthropic/tool-use-input-json.sse", "gemini", "malformed gemini data"),
        ("google/text-crlf.sse", "cohere", "malformed cohere data"),
    ],
)
def test_a_wrong_dialect_is_one_clear_line(
    rxstream: Run, name: str, dialect: str, says: str
) -> None:
    done = rxstream("replay", str(DATA / name), "--dialect", dialect)
    assert done.code == EXIT_ERROR
    assert done.err.startswith("rxstream: error: ")
    assert done.err.count("\n") == 1
    assert says in done.err


def test_replay_help_names_the_kinds_and_dialects(
    rxstream: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        rxstream("replay", "--help")
    # argparse wraps lines, at spaces and after hyphens.
    text = " ".join(capsys.readouterr().out.split()).replace("- ", "-")
    for needle in (
        "--dialect NAME",
        "NDJSON",
        "AWS event stream",
        "FILE.timing",
        "auto",
        *SERVED,
    ):
        assert needle in text


# ----------------------------------------------------------------------------- what a file holds


def test_the_wire_of_each_dialect_is_its_renderers() -> None:
    assert {name: renderer(name).wire for name in SERVED} == WIRE


@pytest.mark.parametrize(
    ("head", "kind"),
    [
        (b"data: {}\n\n", "sse"),
        (b"\xef\xbb\xbf\r\n: comment\r\ndata: x\r\n", "sse"),
        (b"event: message_start\n", "sse"),
        (b"", "sse"),
        (b'\n\n  {"model": "m", "done": false}\n', "ndjson"),
        (b'{"error": "boom"}', "ndjson"),
        (encode_message({":event-type": "messageStop"}, b"{}"), "eventstream"),
        (encode_message({":event-type": "messageStop"}, b"{}")[:16], "eventstream"),
    ],
    ids=[
        "sse",
        "bom-crlf-comment",
        "event-first",
        "empty",
        "ndjson",
        "ndjson-error",
        "es",
        "es-cut",
    ],
)
def test_sniff(head: bytes, kind: str) -> None:
    assert sniff(head) == kind


@pytest.mark.parametrize("head", [b"\x00\x00\x00\x10" + b"\x00" * 12, bytes(range(64))])
def test_binary_that_is_no_event_stream(head: bytes) -> None:
    with pytest.raises(ValueError, match="no AWS event stream"):
        sniff(head)


def test_replay_of_binary_garbage_is_one_clear_line(rxstream: Run, tmp_path: Path) -> None:
    path = tmp_path / "x.bin"
    path.write_bytes(bytes(range(256)) * 4)
    done = rxstream("replay", str(path))
    assert done.code == EXIT_ERROR
    assert done.err == (
        f"rxstream: error: {path}: binary data that is no AWS event stream (its first 12 bytes "
        "are no prelude whose checksum holds)\n"
    )


@pytest.mark.parametrize(
    ("name", "cut", "needle"),
    [
        ("bedrock/converse-stream-text.eventstream", 500, "ended inside"),
        ("ollama/chat-tool-call-llama3.1.ndjson", 214, "ended before"),  # after line 1
    ],
)
def test_a_cut_recording_is_truncated(
    rxstream: Run, tmp_path: Path, name: str, cut: int, needle: str
) -> None:
    path = tmp_path / Path(name).name
    path.write_bytes((DATA / name).read_bytes()[:cut])
    done = rxstream("replay", str(path))
    assert done.code == EXIT_ERROR
    assert needle in done.err, done.err


def test_an_event_stream_with_a_bad_checksum_is_malformed(rxstream: Run, tmp_path: Path) -> None:
    data = bytearray((DATA / "bedrock/converse-stream-text.eventstream").read_bytes())
    data[40] ^= 0xFF  # inside the first message's headers: its message CRC no longer holds
    path = tmp_path / "bad.eventstream"
    path.write_bytes(bytes(data))
    done = rxstream("replay", str(path))
    assert done.code == EXIT_ERROR
    assert "malformed" in done.err
    assert "CRC" in done.err or "checksum" in done.err


# ----------------------------------------------------------------------------- demo and --log


def answer_lines(done: Done) -> list[str]:
    """What the plain view says of the answer: every line between the title and the footer."""
    lines = done.out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("prompt: ")) + 1
    return lines[start:-1]


def test_the_demo_is_the_same_answer_in_every_dialect(rxstream: Run) -> None:
    answers: dict[str, list[str]] = {}
    for api in SERVED:
        done = rxstream("demo", "--delay", "0", "--dialect", api)
        assert done.code == 0, (api, done.err)
        assert done.err == ""
        assert done.out.splitlines()[1].startswith(f"{api}: POST /")
        assert "finish: tool_calls" in done.footer
        assert "provider usage: prompt 58, completion " in done.footer
        answers[api] = answer_lines(done)
    first = answers["openai-chat"]
    assert first[0].startswith("thinking: The user wants the current weather in two cities.")
    assert first[1] == "answer: Let me check the weather in Paris and Tokyo for you."
    assert first[2:] == [
        'tool call: get_weather (call_paris) {"city": "Paris", "unit": "celsius"}',
        'tool call: get_weather (call_tokyo) {"city": "Tokyo", "unit": "celsius"}',
    ]
    assert all(lines == first for lines in answers.values()), answers


@pytest.mark.parametrize("api", SERVED)
def test_every_dialect_logs_what_replay_reads_back(rxstream: Run, tmp_path: Path, api: str) -> None:
    log = tmp_path / f"demo-{api}.log"
    demo = rxstream("demo", "--delay", "0", "--dialect", api, "--log", str(log))
    assert demo.code == 0, demo.err
    sidecar = Path(str(log) + TIMING_SUFFIX)
    kind = {"ollama": "ndjson", "bedrock": "eventstream"}.get(api, "sse")
    assert sniff(log.read_bytes()[:4096]) == kind
    assert sidecar.exists() == (kind != "sse")
    if kind != "sse":
        stamps = [line.split() for line in sidecar.read_text().splitlines()[1:]]
        offsets = [int(offset) for offset, _ in stamps]
        times = [float(t) for _, t in stamps]
        assert offsets[0] == 0
        assert offsets == sorted(offsets)
        assert times == sorted(times)
        assert offsets[-1] < log.stat().st_size
    replay = rxstream("replay", str(log), "--fast")
    assert replay.code == 0, replay.err
    assert replay.out.splitlines()[0].startswith(f"rxstream replay {log}: {api} (detected), ")
    assert replay.out.splitlines()[1:-1] == answer_lines(demo)
    # The recorded times, not the wall clock of the replay: a first token after the first stamp.
    assert "time to first token" in replay.footer


def test_an_ndjson_log_is_exactly_the_lines_that_arrived(rxstream: Run, tmp_path: Path) -> None:
    log = tmp_path / "o.ndjson"
    assert rxstream("demo", "--delay", "0", "--dialect", "ollama", "--log", str(log)).code == 0
    lines = log.read_text().splitlines()
    objects = [json.loads(line) for line in lines]
    assert all(isinstance(o, dict) and "done" in o for o in objects)
    assert objects[-1]["done"] is True
    assert not any(o["done"] for o in objects[:-1])


def ndjson_line(text: str | None, *, done: bool = False) -> str:
    body: dict[str, Any] = {"model": "m", "created_at": "2025-01-01T00:00:00Z", "done": done}
    body["message"] = {"role": "assistant", "content": text or ""}
    if done:
        body |= {"done_reason": "stop", "prompt_eval_count": 3, "eval_count": 2}
    return json.dumps(body) + "\n"


def timed_ndjson(path: Path) -> Path:
    lines = [ndjson_line("Hi"), ndjson_line(" there"), ndjson_line(None, done=True)]
    path.write_text("".join(lines))
    offsets = [0, len(lines[0]), len(lines[0]) + len(lines[1])]
    stamps = "".join(f"{o} {t}\n" for o, t in zip(offsets, (0.25, 0.75, 0.8), strict=True))
    Path(str(path) + TIMING_SUFFIX).write_text("# timing\n" + stamps)
    return path


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "paced"])
def test_a_sidecar_gives_the_footer_its_timings(rxstream: Run, tmp_path: Path, fast: bool) -> None:
    path = timed_ndjson(tmp_path / "t.ndjson")
    done = rxstream("replay", str(path), *(["--fast"] if fast else []))
    assert done.code == 0, done.err
    assert "answer: Hi there" in done.out
    assert done.footer.startswith("-- time to first token 0.25 s · 4.0 ")


def test_without_a_sidecar_an_ndjson_file_plays_at_once(rxstream: Run, tmp_path: Path) -> None:
    path = timed_ndjson(tmp_path / "t.ndjson")
    Path(str(path) + TIMING_SUFFIX).unlink()
    done = rxstream("replay", str(path))
    assert done.code == 0, done.err
    assert "answer: Hi there" in done.out


def test_a_bad_sidecar_is_one_clear_line(rxstream: Run, tmp_path: Path) -> None:
    path = timed_ndjson(tmp_path / "t.ndjson")
    Path(str(path) + TIMING_SUFFIX).write_text("0 0.1\nten 0.2\n")
    done = rxstream("replay", str(path))
    assert done.code == EXIT_ERROR
    assert done.err == (
        f"rxstream: error: {path}: {path}{TIMING_SUFFIX}, line 2: expected "
        "'<byte offset> <seconds>', got 'ten 0.2'\n"
    )


class FakeWait:
    """Stands in for the recording's wait: notes each wait instead of sleeping."""

    def __init__(self, cancel_at: int | None = None) -> None:
        self.waits: list[float] = []
        self.cancel_at = cancel_at

    def __call__(self, seconds: float) -> bool:
        self.waits.append(seconds)
        return len(self.waits) == self.cancel_at  # True: cancelled


def event_stream(path: Path, times: list[float]) -> list[bytes]:
    messages = [
        encode_message({":event-type": "contentBlockDelta"}, json.dumps({"n": n}).encode())
        for n in range(len(times))
    ]
    path.write_bytes(b"".join(messages))
    offsets = [sum(map(len, messages[:n])) for n in range(len(messages))]
    stamps = "".join(f"{o} {t}\n" for o, t in zip(offsets, times, strict=True))
    Path(str(path) + TIMING_SUFFIX).write_text(stamps)
    return messages


@pytest.mark.parametrize(
    ("paced", "cancel_at", "waits", "pieces"),
    [
        (True, None, [0.5, 1.0, 2.5], 3),
        (False, None, [], 3),
        (True, 2, [0.5, 1.0], 1),  # cancelled while waiting for the second message
    ],
    ids=["paced", "fast", "cancelled"],
)
def test_an_event_stream_is_cut_and_paced_at_its_stamps(
    tmp_path: Path, paced: bool, cancel_at: int | None, waits: list[float], pieces: int
) -> None:
    path = tmp_path / "t.eventstream"
    messages = event_stream(path, [0.5, 1.0, 2.5])
    recording = Recording(str(path), "eventstream", paced=paced)
    recording._monotonic = lambda: 100.0  # a clock that stands still: waits are the stamps
    fake = FakeWait(cancel_at)
    recording._wait = fake
    assert recording.timed
    got = list(recording.pieces())
    assert fake.waits == pytest.approx(waits)
    assert got == messages[:pieces]  # one block per stamped message
    assert recording.clock() == (2.5 if cancel_at is None else 0.5)


def test_a_long_event_stream_without_stamps_comes_in_blocks(tmp_path: Path) -> None:
    path = tmp_path / "big.eventstream"
    data = encode_message({":event-type": "x"}, b"y" * (Recording.BLOCK * 2 + 10))
    path.write_bytes(data)
    recording = Recording(str(path), "eventstream", paced=True)
    got = list(recording.pieces())
    assert [len(piece) for piece in got] == [
        Recording.BLOCK,
        Recording.BLOCK,
        len(data) - 2 * Recording.BLOCK,
    ]
    assert not recording.timed


def test_a_chat_log_over_ndjson_replays_the_same(rxstream: Run, tmp_path: Path) -> None:
    from rxstream.testing.server import FakeLLMServer, Scenario

    log = tmp_path / "chat.ndjson"
    with FakeLLMServer(Scenario.text("Hel", "lo")) as server:
        done = rxstream(
            "chat",
            "x",
            "--dialect",
            "ollama",
            "--base-url",
            f"http://127.0.0.1:{server.port}",
            "--log",
            str(log),
        )
    assert done.code == 0, done.err
    replay = rxstream("replay", str(log), "--json", "--fast")
    texts = [item.text for item in deltas_of(replay) if isinstance(item, TextDelta)]
    assert "".join(texts) == "Hello"


def test_the_cli_serves_what_the_fake_server_serves() -> None:
    from rxstream.core.dialects import DIALECTS
    from rxstream.testing.server import SERVED as SERVER_SERVED

    assert SERVED == SERVER_SERVED == (*DIALECTS, "ai-sdk")
