"""The entry format's two machines, without Redis: `EntryWriter` spells, `EntryReader` reads.

Table-driven: what the writer sends at each moment (items, a heartbeat when
idle, an expiry refresh at the heartbeat's pace, the end), and what the reader
makes of entry sequences (a retried write read once, a gap named, items before
an error still emitted), in every reply shape redis-py hands out.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import rxstream as rs
from rxstream.core import wire
from rxstream.io.redis.entries import (
    Entry,
    EntryReader,
    EntryWriter,
    entries_of,
    error_payload,
    item_payload,
    parse_id,
)
from tests.support.redis_steps import entry, kinds

# --------------------------------------------------------------------------- writer


def test_the_writer_numbers_entries_and_beats_when_idle() -> None:
    writer = EntryWriter("k", maxlen=100, ttl=60, heartbeat=2)
    start = writer.start(now=0.0)
    assert start[0] == "EVAL"
    assert start[3] == "k"
    assert start[-1] == 60_000
    steps: list[tuple[float, list[bytes], tuple[bytes, bytes | None] | None, list[str]]] = [
        (0.5, [b"a", b"b"], None, ["item#1", "item#2"]),
        (1.0, [], None, []),  # idle, but not for a heartbeat yet
        (2.6, [], None, ["beat#3", "PEXPIRE"]),  # 2.1 s idle: beat, and the expiry is due
        (3.0, [b"c"], None, ["item#4"]),
        (4.7, [b"d"], None, ["item#5", "PEXPIRE"]),  # busy: no beat, but the expiry refresh
        (5.0, [], (b"end", None), ["end#6", "PEXPIRE"]),
    ]
    for now, payloads, end, expected in steps:
        assert kinds(writer.commands(payloads, end, now)) == expected, now
    assert writer.items == 4


def test_the_writer_trims_approximately_or_not_at_all() -> None:
    capped = EntryWriter("k", maxlen=10, ttl=60, heartbeat=2).commands([b"x"], None, 0.0)[0]
    assert capped[:6] == ("XADD", "k", "MAXLEN", "~", 10, "*")
    uncapped = EntryWriter("k", maxlen=None, ttl=60, heartbeat=2).commands([b"x"], None, 0.0)[0]
    assert uncapped[:3] == ("XADD", "k", "*")


def test_the_next_beat_follows_the_last_write() -> None:
    writer = EntryWriter("k", maxlen=None, ttl=60, heartbeat=2)
    writer.start(now=10.0)
    assert writer.next_beat() == 12.0
    writer.commands([b"x"], None, 11.0)
    assert writer.next_beat() == 13.0


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (
            rs.ProviderError("Overloaded", code=529),
            ("ProviderError", "provider error (code 529): Overloaded"),
        ),
        (ValueError("x" * 300), ("StreamError", "ValueError: " + "x" * 200 + "… (300 chars)")),
    ],
    ids=["stream-error", "other-error"],
)
def test_error_payloads(error: BaseException, expected: tuple[str, str]) -> None:
    obj = json.loads(error_payload(error))
    assert (obj["error"], obj["message"]) == expected


def test_the_entry_fields_are_the_wires() -> None:
    # The pure mapping lives in rxstream.core.wire; this module adds the commands.
    assert wire.entry_fields("item", 4, b"{}") == (
        b"v",
        b"1",
        b"n",
        4,
        b"kind",
        b"item",
        b"data",
        b"{}",
    )
    assert wire.entry_fields("beat", 5) == (b"v", b"1", b"n", 5, b"kind", b"beat")
    with pytest.raises(ValueError, match="unknown entry kind 'poem'"):
        wire.entry_fields("poem", 1)
    writer = EntryWriter("k", maxlen=None, ttl=60, heartbeat=2)
    writer.start(0.0)
    (xadd, _) = writer.commands([b"{}"], (b"end", None), 1.0)[:2]
    assert xadd == ("XADD", "k", "*", *wire.entry_fields("item", 1, b"{}"))


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"event": "x"}, "it was not written by rxstream.to_redis_stream"),
        ({"v": "2", "n": "0", "kind": "item"}, "it is in rxstream format '2'"),
        ({"v": b"1", "n": b"-1", "kind": b"item"}, "it has no number: n='-1'"),
    ],
)
def test_the_wire_refuses_entries_of_another_writer(fields: dict[str, Any], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        wire.entry_number(fields)


def test_the_wire_reads_kinds_and_data() -> None:
    assert wire.entry_kind({"kind": b"end"}) == "end"
    with pytest.raises(ValueError, match="unknown kind 'poem'"):
        wire.entry_kind({"kind": "poem"})
    assert wire.read_json(b'{"heartbeat":2}') == {"heartbeat": 2}
    with pytest.raises(ValueError, match="it has no data"):
        wire.read_json(None)
    with pytest.raises(ValueError, match="holds no JSON"):
        wire.read_json(b"{nope")


def test_an_item_payload_is_the_codec_json() -> None:
    item = rs.TextDelta("é \ud800")
    assert wire.decode(json.loads(item_payload(item))) == item
    with pytest.raises(TypeError, match="cannot encode a str"):
        item_payload("a line")


# --------------------------------------------------------------------------- ids


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0-0", (0, 0)),
        ("1700000000000-12", (1700000000000, 12)),
        ("18446744073709551615-18446744073709551615", (2**64 - 1, 2**64 - 1)),
        ("18446744073709551616-0", None),
        ("1", None),
        ("a-b", None),
        ("١-٠", None),  # Arabic-Indic digits are digits to Python, not to Redis
        ("", None),
    ],
)
def test_parse_id(text: str, expected: tuple[int, int] | None) -> None:
    assert parse_id(text) == expected


# --------------------------------------------------------------------------- reader


START = entry(0, "start", {"heartbeat": 2.0, "maxlen": None})


def texts(items: list[Any]) -> list[str]:
    return [item.text for item in items]


def test_the_reader_reads_items_and_stops_at_the_end() -> None:
    reader = EntryReader("k", ids=False)
    assert texts(reader.feed([START, entry(1), entry(2)])) == ["1", "2"]
    assert reader.heartbeat == 2.0
    assert not reader.done
    assert texts(reader.feed([entry(3), entry(4, "end"), entry(5)])) == ["3"]
    assert reader.done
    assert reader.failure is None
    assert reader.position == "1004-0"
    assert reader.newest_ms == 1004


def test_a_retried_write_is_read_once() -> None:
    reader = EntryReader("k", ids=False)
    # The client lost its connection after entries 1 and 2 were applied, and
    # sent the whole batch again.
    got = reader.feed([START, entry(1), entry(2), entry(1, ms=2000), entry(2, ms=2000), entry(3)])
    assert texts(got) == ["1", "2", "3"]
    assert reader.failure is None


def test_items_before_an_error_marker_come_out_then_the_error() -> None:
    reader = EntryReader("k", ids=True)
    error = json.loads(error_payload(rs.TruncatedStreamError("cut", unfinished=(0,))))
    got = reader.feed([START, entry(1), entry(2, "error", error)])
    assert [e.item.text for e in got] == ["1"]
    assert got[0].id == "1001-0"
    assert reader.done
    assert isinstance(reader.failure, rs.TruncatedStreamError)
    with pytest.raises(rs.TruncatedStreamError, match="cut"):
        reader.check()


@pytest.mark.parametrize(
    ("entries", "missing", "words"),
    [
        ([entry(3)], (0, 2), "entries 0 to 2 are gone (3 in all, before the first entry"),
        ([START, entry(1), entry(5)], (2, 4), "between ids '1001-0' and '1005-0'"),
        ([START, entry(2)], (1, 1), "entry 1 is gone (1 in all"),
    ],
    ids=["head-trimmed", "middle", "one"],
)
def test_a_gap_is_named(entries: list[Entry], missing: tuple[int, int], words: str) -> None:
    reader = EntryReader("k", ids=False)
    reader.feed(entries)
    assert isinstance(reader.failure, rs.StoredStreamError)
    assert reader.failure.missing == missing
    assert words in str(reader.failure)


def test_resume_stands_after_the_entry() -> None:
    reader = EntryReader("k", ids=False)
    assert reader.resume("1002-0", [entry(2)], [START], [entry(9)]) == []
    assert (reader.position, reader.expected) == ("1002-0", 3)
    assert texts(reader.feed([entry(3)])) == ["3"]


@pytest.mark.parametrize(
    ("after", "first", "words"),
    [
        ("1001-0", entry(4), "that entry is gone, with entries 0 to 3"),
        ("1001-5", START, "no entry of the stream has that id"),
        ("5000-0", entry(4), "no entry of the stream has that id"),
    ],
    ids=["trimmed", "never-an-id", "beyond-the-end"],
)
def test_resume_after_an_id_the_stream_does_not_hold(after: str, first: Entry, words: str) -> None:
    reader = EntryReader("k", ids=False)
    with pytest.raises(rs.StoredStreamError, match=words):
        reader.resume(after, [], [first], [entry(9)])


# --------------------------------------------------------------------------- reply shapes


FIELDS_BYTES = {b"v": b"1", b"n": b"1", b"kind": b"beat"}
FIELDS_FLAT = [b"v", b"1", b"n", b"1", b"kind", b"beat"]
REPLIES: dict[str, tuple[Any, bool]] = {
    "resp2-xread": ([[b"k", [(b"1-0", FIELDS_BYTES)]]], True),
    "resp3-xread": ({b"k": [(b"1-0", FIELDS_BYTES)]}, True),
    "resp3-xread-wrapped": ({b"k": [[(b"1-0", FIELDS_BYTES)]]}, True),
    "raw-pairs": ([[b"k", [[b"1-0", FIELDS_FLAT]]]], True),
    "decoded": ([["k", [("1-0", {"v": "1", "n": "1", "kind": "beat"})]]], True),
    "xrange": ([(b"1-0", FIELDS_BYTES)], False),
}


@pytest.mark.parametrize("shape", REPLIES)
def test_entries_of_every_reply_shape(shape: str) -> None:
    reply, xread = REPLIES[shape]
    (got,) = entries_of(reply, xread=xread)
    assert got.id == "1-0"
    assert {k: (v.decode() if isinstance(v, bytes) else v) for k, v in got.fields.items()} == {
        "v": "1",
        "n": "1",
        "kind": "beat",
    }


@pytest.mark.parametrize("reply", [None, [], {}])
def test_entries_of_nothing(reply: Any) -> None:
    assert entries_of(reply, xread=True) == []
