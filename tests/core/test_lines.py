"""LineSplitter: CRLF/LF/CR only, across any chunk boundary, bytes cut before decoding."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxstream.core.lines import DEFAULT_LIMIT, LineSplitter
from rxstream.errors import LineTooLongError
from tests.support.chunking import chunkings, outputs_for_all_chunkings

# (id, input, expected lines): each runs as bytes and, decoded, as str.
CASES = [
    ("empty", b"", []),
    ("one-line-no-terminator", b"abc", ["abc"]),
    ("lf", b"a\nb\n", ["a", "b"]),
    ("crlf", b"a\r\nb\r\n", ["a", "b"]),
    ("cr", b"a\rb\r", ["a", "b"]),
    ("mixed", b"a\r\nb\nc\rd", ["a", "b", "c", "d"]),
    ("blank-lines", b"\n\r\n\r", ["", "", ""]),
    ("lf-cr-is-two-terminators", b"a\n\rb", ["a", "", "b"]),
    ("cr-cr-lf", b"a\r\r\nb", ["a", "", "b"]),
    ("lone-cr-at-end", b"data: x\r", ["data: x"]),
    ("crlf-at-end", b"data: x\r\n", ["data: x"]),
    ("sse-event-crlf", b"data: {}\r\n\r\n", ["data: {}", ""]),
    ("sse-two-events", b"data: 1\n\ndata: 2\n\n", ["data: 1", "", "data: 2", ""]),
    ("tab-and-spaces-kept", b" \ta \t\n", [" \ta \t"]),
    (
        "unicode-separators-stay",
        'data: {"t":"a\u2028b\u2029c\u0085d"}\n'.encode(),
        ['data: {"t":"a\u2028b\u2029c\u0085d"}'],
    ),
    ("control-separators-stay", b"a\x0bb\x0cc\x1cd\x1de\x1ef\n", ["a\x0bb\x0cc\x1cd\x1de\x1ef"]),
    ("multibyte", "é€😀\nß\n".encode(), ["é€😀", "ß"]),
    ("bom-removed", b"\xef\xbb\xbfdata: x\n", ["data: x"]),
    ("bom-only", b"\xef\xbb\xbf", []),
    ("double-bom-second-kept", b"\xef\xbb\xbf\xef\xbb\xbfa\n", ["\ufeffa"]),
    ("bom-mid-stream-kept", b"a\n\xef\xbb\xbfb\n", ["a", "\ufeffb"]),
    ("bom-then-crlf", b"\xef\xbb\xbf\r\na", ["", "a"]),
]

# Only meaningful as bytes: invalid or incomplete UTF-8.
BYTES_ONLY = [
    ("invalid-byte", b"a\xffb\n", ["a\ufffdb"]),
    ("truncated-sequence-before-lf", b"a\xe2\x82\nb", ["a\ufffd", "b"]),
    ("truncated-sequence-at-end", b"a\xe2\x82", ["a\ufffd"]),
    ("lone-continuation", b"\x80\n", ["\ufffd"]),
    ("partial-bom-is-text", b"\xef\xbb", ["\ufffd"]),
    ("bom-prefix-then-text", b"\xef\xbbx\n", ["\ufffdx"]),
]


@pytest.mark.parametrize(("data", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bytes(data: bytes, expected: list[str]) -> None:
    assert outputs_for_all_chunkings(LineSplitter, data) == expected


@pytest.mark.parametrize(("data", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_str(data: bytes, expected: list[str]) -> None:
    assert outputs_for_all_chunkings(LineSplitter, data.decode()) == expected


@pytest.mark.parametrize(
    ("data", "expected"), [c[1:] for c in BYTES_ONLY], ids=[c[0] for c in BYTES_ONLY]
)
def test_invalid_utf8(data: bytes, expected: list[str]) -> None:
    assert outputs_for_all_chunkings(LineSplitter, data) == expected


def test_line_emitted_at_cr_and_next_lf_swallowed() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b"data: 1\r") == ["data: 1"]  # at once, not at the LF
    assert splitter.feed(b"\n") == []
    assert splitter.feed(b"\ndata: 2\r") == ["", "data: 2"]
    assert splitter.feed(b"") == []  # an empty chunk keeps the CR pending
    assert splitter.feed(b"\nx") == []
    assert splitter.close() == ["x"]


def test_multibyte_char_split_at_every_byte() -> None:
    text = "a😀é€b"
    data = text.encode()
    for i in range(1, len(data)):
        for j in range(i, len(data)):
            splitter = LineSplitter()
            out = splitter.feed(data[:i]) + splitter.feed(data[i:j]) + splitter.feed(data[j:])
            assert out + splitter.close() == [text], (i, j)


def test_bom_split_across_first_chunks() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b"\xef") == []
    assert splitter.feed(b"\xbb") == []
    assert splitter.feed(b"\xbfdata: x\n") == ["data: x"]
    assert splitter.close() == []


def test_str_bom_in_first_nonempty_chunk_only() -> None:
    splitter = LineSplitter()
    assert splitter.feed("") == []
    assert splitter.feed("\ufeffa\n\ufeffb") == ["a"]
    assert splitter.close() == ["\ufeffb"]


# (id, limit, input): the line at the end of each input is one unit too long.
TOO_LONG = [
    ("first-line", 4, b"abcde\n"),
    ("unterminated", 4, b"abcde"),
    ("after-good-lines", 4, b"ab\nabcd\r\nabcde\n"),
    ("multibyte-counted-in-bytes", 5, "ab\né€é".encode()),
    ("limit-one", 1, b"a\nbb"),
]


@pytest.mark.parametrize(("limit", "data"), [c[1:] for c in TOO_LONG], ids=[c[0] for c in TOO_LONG])
@pytest.mark.parametrize("kind", ["bytes", "str"])
def test_line_too_long(limit: int, data: bytes, kind: str) -> None:
    payload: str | bytes = data if kind == "bytes" else data.decode()
    if kind == "str" and "é€é" in payload:
        limit = 2  # the same overflow, counted in characters
    good = payload.splitlines()[:-1]  # safe here: the inputs hold no exotic separators
    for name, pieces in chunkings(payload):  # type: ignore[type-var]  # one kind per case
        splitter = LineSplitter(line_limit=limit)
        out: list[str] = []
        with pytest.raises(LineTooLongError) as info:
            _feed_into(splitter, [*pieces, None], out)
        assert out == [g if isinstance(g, str) else g.decode() for g in good], name
        assert info.value.limit == limit
        assert f"limit of {limit}" in str(info.value)
        last = payload.splitlines()[-1]
        head = last if isinstance(last, str) else last.decode("utf-8", "replace")
        assert head[:2] in str(info.value), name  # the quote starts where the line does
        with pytest.raises(RuntimeError, match="failed"):
            splitter.feed(payload[:1])


def test_line_too_long_message_quotes_a_bounded_head() -> None:
    splitter = LineSplitter(line_limit=10_000)
    with pytest.raises(LineTooLongError) as info:
        splitter.feed(b"data: " + b"x" * 20_000)
    message = str(info.value)
    assert "data: xxx" in message
    assert len(message) < 400


def test_long_line_in_small_chunks_is_stopped_at_the_limit() -> None:
    splitter = LineSplitter(line_limit=1000)
    out: list[str] = []
    for _ in range(142):  # 994 bytes
        out.extend(splitter.feed(b"x" * 7))
    with pytest.raises(LineTooLongError):
        splitter.feed(b"x" * 7)  # 1001 bytes: refused before it is buffered
    assert out == []


@pytest.mark.parametrize("kind", ["bytes", "str"])
def test_limit_exactly_reached_is_fine(kind: str) -> None:
    line = "é" * 4 if kind == "str" else "é" * 2  # 4 chars / 4 bytes
    payload: str | bytes = (
        (line + "\r\n" + line) if kind == "str" else (line + "\r\n" + line).encode()
    )
    got = outputs_for_all_chunkings(lambda: LineSplitter(line_limit=4), payload)  # type: ignore[type-var]
    assert got == [line, line]


def test_default_limit_is_one_mib() -> None:
    assert DEFAULT_LIMIT == 1_048_576
    splitter = LineSplitter()
    assert splitter.feed(b"x" * DEFAULT_LIMIT + b"\n") == ["x" * DEFAULT_LIMIT]
    with pytest.raises(LineTooLongError):
        splitter.feed(b"x" * (DEFAULT_LIMIT + 1))


@pytest.mark.parametrize(
    ("limit", "error"),
    [(0, ValueError), (-1, ValueError), (1.5, TypeError), (True, TypeError), ("10", TypeError)],
    ids=["zero", "negative", "float", "bool", "str"],
)
def test_bad_limit(limit: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="limit"):
        LineSplitter(line_limit=limit)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("first", "second"),
    [(b"a", "b"), ("a", b"b"), (b"", "b"), ("", b"")],
    ids=["bytes-then-str", "str-then-bytes", "empty-bytes-then-str", "empty-str-then-bytes"],
)
def test_mixing_types_is_a_type_error(first: str | bytes, second: str | bytes) -> None:
    splitter = LineSplitter()
    splitter.feed(first)
    with pytest.raises(TypeError, match="chunk"):
        splitter.feed(second)


@pytest.mark.parametrize(
    "chunk", [1, None, ["a"], memoryview(b"a")], ids=["int", "none", "list", "memoryview"]
)
def test_other_types_are_a_type_error(chunk: object) -> None:
    with pytest.raises(TypeError, match="str or bytes"):
        LineSplitter().feed(chunk)  # type: ignore[arg-type]


def test_bytearray_is_taken_as_bytes() -> None:
    splitter = LineSplitter()
    assert splitter.feed(bytearray(b"a\nb")) == ["a"]
    assert splitter.feed(b"c\n") == ["bc"]


def test_feed_or_close_after_close_is_refused() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b"a") == []
    assert splitter.close() == ["a"]
    with pytest.raises(RuntimeError, match="closed"):
        splitter.feed(b"b")
    with pytest.raises(RuntimeError, match="closed"):
        splitter.close()


def test_common_case_chunk_of_whole_lines() -> None:
    lines = [f'data: {{"choices":[{{"delta":{{"content":"tok{i}"}}}}]}}' for i in range(13)]
    chunk = "".join(f"{line}\n\n" for line in lines).encode()
    expected = [x for line in lines for x in (line, "")]
    splitter = LineSplitter()
    assert splitter.feed(chunk) == expected
    assert splitter.close() == []


def _feed_into(splitter: LineSplitter, pieces: list[str | bytes | None], out: list[str]) -> None:
    """Feed each piece into `out`; None stands for `close()`."""
    for piece in pieces:
        out.extend(splitter.close() if piece is None else splitter.feed(piece))


def _feed_all(pieces: list[bytes]) -> list[str]:
    splitter = LineSplitter()
    out = [line for piece in pieces for line in splitter.feed(piece)]
    return out + splitter.close()


@st.composite
def _bytes_and_cuts(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    alphabet = st.sampled_from([b"\r", b"\n", b"\r\n", b"a", b" ", b"\xc3\xa9", b"\xe2\x80\xa8"])
    data = b"".join(draw(st.lists(alphabet | st.binary(max_size=3), max_size=40)))
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=8)))
    pieces = [data[i:j] for i, j in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    return data, pieces


@settings(max_examples=200, deadline=None)
@given(_bytes_and_cuts())
def test_any_chunking_gives_the_same_lines(case: tuple[bytes, list[bytes]]) -> None:
    data, pieces = case
    lines = _feed_all(pieces)
    assert lines == _feed_all([data])
    assert not any("\r" in line or "\n" in line for line in lines)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.text(
            st.characters(blacklist_characters="\r\n", blacklist_categories=["Cs"]), max_size=20
        ),
        max_size=10,
    )
)
def test_lf_only_input_round_trips(lines: list[str]) -> None:
    text = "".join(f"{line}\n" for line in lines)
    if text.startswith("\ufeff"):
        text = "x" + text
        lines = ["x" + lines[0], *lines[1:]]
    assert _feed_all([text.encode()]) == lines
    splitter = LineSplitter()
    assert splitter.feed(text) + splitter.close() == lines
