"""The entries of a stream kept in Redis: how they are written and read, without any I/O.

`rs.to_redis_stream` writes one Redis Stream entry per item and
`rs.from_redis_stream` reads them back; this module holds the rules both
follow, as two small machines the sync and async shells drive:

- `EntryWriter` numbers the entries and spells the commands (`XADD` with
  `MAXLEN ~`, `PEXPIRE`), and says when a heartbeat or a refresh of the
  expiry is due (the time is passed in; no clock is read here);
- `EntryReader` turns entries back into items, in order, each exactly once,
  raises the stored error at an error marker, and finds gaps: entries that
  are gone (trimmed by `MAXLEN`, or lost in a restart of Redis) before the
  reader got to them.

The entry format is rxstream's own (`rxstream.core.wire`, which writes and
reads each entry's fields; see docs/concepts/wire-format.md), one Redis
Stream entry with these fields:

- `v`: `FORMAT_VERSION` of the item encoding, as decimal text (`"1"`);
- `n`: the entry's number: 0 for the first, then 1, 2, ... with no gap;
- `kind`: `start`, `item`, `beat`, `end` or `error`;
- `data`: for `start`, `{"heartbeat": <seconds>, "maxlen": <n or null>}`; for
  `item`, the item as `wire.encode` JSON; for `error`, the error as
  `wire.encode_error` JSON; absent for `beat` and `end`.

This module adds what is Redis's: the commands, the shapes of the replies,
the numbering, gaps and resuming.

A stream is `start`, then `item`s and `beat`s in any mix, then one `end`
(completed) or `error`. The numbers make gaps visible (Redis Streams do not
say what `MAXLEN` trimmed), and make a write that a client retried after a
dropped connection harmless: an entry whose number was already read is
skipped, so a reader sees every item exactly once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from ...core import wire
from ...errors import StoredStreamError, StreamError, StreamTimeoutError, excerpt
from ...models import StreamEntry

__all__ = [
    "START_SCRIPT",
    "Entry",
    "EntryReader",
    "EntryWriter",
    "Reply",
    "encodable",
    "entries_of",
    "error_payload",
    "item_payload",
    "parse_id",
]

#: A decoded Redis reply: its shape depends on the client (bytes or str, RESP2 or RESP3).
Reply: TypeAlias = Any

_VERSION = str(wire.FORMAT_VERSION).encode()
_ID = re.compile(r"([0-9]{1,20})-([0-9]{1,20})")
_MAX_ID_PART = 2**64 - 1

# The first write of a producer: create the stream with its `start` entry only
# when the key holds nothing (one stream per key and subscription, so two
# producers never interleave), in one atomic step. Returns the type the key
# held ("none" when the stream was created).
START_SCRIPT = """\
local held = redis.call('TYPE', KEYS[1])['ok']
if held ~= 'none' then return held end
redis.call('XADD', KEYS[1], '*', 'v', ARGV[1], 'n', '0', 'kind', 'start', 'data', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 'none'
"""

#: The `data` of an item entry (`rxstream.core.wire.item_data`).
item_payload = wire.item_data

#: Whether an item is of a type the format encodes (`rxstream.core.wire.encodable`).
encodable = wire.encodable

#: The `data` of an error entry (`rxstream.core.wire.error_data`).
error_payload = wire.error_data


def parse_id(text: str) -> tuple[int, int] | None:
    """A Redis entry id `"<milliseconds>-<sequence>"` as a pair, or None when malformed."""
    match = _ID.fullmatch(text)
    if match is None:
        return None
    ms, seq = int(match[1]), int(match[2])
    if ms > _MAX_ID_PART or seq > _MAX_ID_PART:
        return None
    return ms, seq


# --------------------------------------------------------------------------- writing


class EntryWriter:
    """Numbers a producer's entries and spells its commands.

    Args:
        key: the stream's key.
        maxlen: the approximate cap on entries (`MAXLEN ~`), or None.
        ttl: seconds the key lives after the last refresh (refreshed every
            `heartbeat` seconds while the stream runs, and at the end).
        heartbeat: seconds without a write after which a `beat` entry is due.
    """

    def __init__(self, key: str, *, maxlen: int | None, ttl: float, heartbeat: float) -> None:
        self.key = key
        self.heartbeat = heartbeat
        self.ttl_ms = max(1, round(ttl * 1000))
        self.maxlen = maxlen
        self.items = 0
        self._number = 0
        self._head: tuple[Any, ...] = (
            ("XADD", key, "MAXLEN", "~", maxlen, "*") if maxlen is not None else ("XADD", key, "*")
        )
        self._last_write = float("-inf")
        self._last_expire = float("-inf")

    def start(self, now: float) -> tuple[Any, ...]:
        """The `EVAL` command that creates the stream with its `start` entry (number 0)."""
        self._last_write = self._last_expire = now
        data = wire.start_data(self.heartbeat, self.maxlen)
        return ("EVAL", START_SCRIPT, 1, self.key, _VERSION, data, self.ttl_ms)

    def commands(
        self, payloads: Iterable[bytes], end: tuple[bytes, bytes | None] | None, now: float
    ) -> list[tuple[Any, ...]]:
        """The commands that write `payloads` (item data), then `end` when given.

        A `beat` entry is added when nothing else is written and nothing was
        for `heartbeat` seconds; a `PEXPIRE` follows the entries when the last
        one is `heartbeat` seconds old, and always with the end.

        Args:
            payloads: the `data` of each item entry, in order.
            end: `(b"end", None)` or `(b"error", data)`, or None.
            now: the current time (a monotonic clock, in seconds).
        """
        commands = [self._xadd(b"item", data) for data in payloads]
        self.items += len(commands)
        if end is not None:
            commands.append(self._xadd(*end))
        elif not commands and now - self._last_write >= self.heartbeat:
            commands.append(self._xadd(b"beat", None))
        if commands and (end is not None or now - self._last_expire >= self.heartbeat):
            commands.append(("PEXPIRE", self.key, self.ttl_ms))
            self._last_expire = now
        if commands:
            self._last_write = now
        return commands

    def next_beat(self) -> float:
        """When a `beat` is due if nothing is written before (same clock as `now`)."""
        return self._last_write + self.heartbeat

    def _xadd(self, kind: bytes, data: bytes | None) -> tuple[Any, ...]:
        self._number += 1
        return (*self._head, *wire.entry_fields(kind.decode(), self._number, data))


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True, slots=True)
class Entry:
    """One stream entry as read: its id and its fields (names and values as text or bytes)."""

    id: str
    fields: Mapping[str, bytes | str]


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _fields(raw: Reply) -> dict[str, bytes | str]:
    if isinstance(raw, Mapping):
        return {_text(k): v for k, v in raw.items()}
    if isinstance(raw, list | tuple):
        return {_text(raw[i]): raw[i + 1] for i in range(0, len(raw) - 1, 2)}
    return {}


def _entry_list(raw: Reply) -> list[Entry]:
    if not raw:
        return []
    # RESP3 replies of some redis-py versions wrap a stream's entries in one more list.
    if (
        len(raw) == 1
        and isinstance(raw[0], list)
        and raw[0]
        and isinstance(raw[0][0], list | tuple)
    ):
        raw = raw[0]
    return [Entry(_text(item[0]), _fields(item[1])) for item in raw if item and item[0] is not None]


def entries_of(reply: Reply, *, xread: bool) -> list[Entry]:
    """The entries of an `XREAD` (one key) or `XRANGE` reply, in any of redis-py's shapes."""
    if not reply:
        return []
    if not xread:
        return _entry_list(reply)
    groups = list(reply.values()) if isinstance(reply, Mapping) else [g[1] for g in reply]
    return [entry for group in groups for entry in _entry_list(group)]


class EntryReader:
    """Turns a stream's entries into its items, in order, each once; finds the end and the gaps.

    Feed it what `XREAD` returns, starting after `position`. Entries of the
    format described in the module docstring only: anything else is a
    `StoredStreamError` naming the entry.

    Args:
        key: the stream's key (for messages).
        ids: emit `StreamEntry(id, item)` instead of bare items.
    """

    def __init__(self, key: str, *, ids: bool) -> None:
        self.key = key
        self.ids = ids
        self.position = "0-0"
        self.expected = 0
        self.done = False
        self.failure: StreamError | None = None
        self.items = 0
        self.newest_ms: int | None = None
        self.heartbeat: float | None = None

    # ------------------------------------------------------------- resuming

    def resume(
        self, after: str, found: list[Entry], first: list[Entry], last: list[Entry]
    ) -> list[Any]:
        """Stand after the entry `after` (an SSE `Last-Event-ID`).

        Args:
            after: the id to resume after, already checked by `parse_id`.
            found: the reply of `XRANGE key after after` (the entry, or nothing).
            first: the reply of `XRANGE key - + COUNT 1` (the oldest entry held).
            last: the reply of `XREVRANGE key + - COUNT 1` (the newest entry held).

        Returns:
            Nothing (an empty list): items come from the next `feed`. When
            `after` is the end marker, `done` is set (and `failure` at an
            error marker).

        Raises:
            StoredStreamError: `after` names no entry of the stream (older
                than what it still holds: trimmed; or never one of its ids).
        """
        if found:
            entry = found[0]
            number = self._number(entry)
            self.position, self.expected = entry.id, number + 1
            self._seen(entry)
            kind = self._kind(entry)
            if kind == "start":
                self._start(entry)
            elif kind in ("end", "error"):
                self._finish(entry, kind)
            return []
        oldest, newest = (first[0] if first else None), (last[0] if last else None)
        if oldest is None or newest is None:
            raise StoredStreamError(
                self.key, f"cannot resume after {after!r}: the stream holds no entries", after=after
            )
        oldest_number = self._number(oldest)
        if _before(after, oldest.id) and oldest_number > 0:
            raise StoredStreamError(
                self.key,
                f"cannot resume after {after!r}: that entry is gone, with entries 0 to "
                f"{oldest_number - 1} (trimmed by MAXLEN, or lost in a restart of Redis); "
                f"the stream now starts at entry {oldest_number}, id {oldest.id!r}",
                after=after,
                missing=(0, oldest_number - 1),
            )
        raise StoredStreamError(
            self.key,
            f"cannot resume after {after!r}: no entry of the stream has that id (it holds "
            f"{oldest.id!r} to {newest.id!r}); the id belongs to another stream or was made up",
            after=after,
        )

    # ------------------------------------------------------------- following

    def feed(self, entries: Iterable[Entry]) -> list[Any]:
        """The items of `entries` (read after `position`, in order).

        Sets `done` at the end marker, and at anything that ends the stream
        with an error, which is kept in `failure` (the items before it are
        returned first; `check()` raises it):

        - the error marker: the producer's error, as its own class;
        - `StoredStreamError`: a gap (entries gone before they were read), an
          entry not written by rxstream, or of a newer format.
        """
        out: list[Any] = []
        try:
            for entry in entries:
                if self.done:
                    break
                number = self._number(entry)
                self._seen(entry)
                if number < self.expected:
                    continue  # written twice by a client's retry: already read
                if number > self.expected:
                    self._gap(entry, number)
                self.position, self.expected = entry.id, number + 1
                kind = self._kind(entry)
                if kind == "item":
                    item = self._item(entry)
                    self.items += 1
                    out.append(StreamEntry(entry.id, item) if self.ids else item)
                elif kind in ("end", "error"):
                    self._finish(entry, kind)
                elif kind == "start":
                    self._start(entry)
        except StreamError as exc:
            self.done, self.failure = True, exc
        return out

    def reached(self, position: str, expected: int) -> None:
        """Check that this reader got to `position` (whose next entry number is `expected`).

        A follower that read a stretch of the stream (a backlog, with
        `XRANGE`) up to an entry another reader saw calls it at the end: when
        entries of that stretch are gone (trimmed meanwhile), `feed` saw
        none of them past its position, and this is where the gap shows.
        Sets `done` and `failure` (a `StoredStreamError` naming the entries)
        then, as `feed` does.
        """
        if self.done or self.expected >= expected:
            return
        self.done, self.failure = True, self._gone(expected, position)

    def check(self) -> None:
        """Raise the error the stream ended with, if any (see `feed`)."""
        if self.failure is not None:
            raise self.failure

    def timeout(self, seconds: float, *, started: bool) -> StreamTimeoutError:
        """The error that ends a follower that waited `seconds` in vain."""
        if not started:
            message = (
                f"no stream at Redis key {self.key!r}: nothing was written there within "
                f"{seconds:g} s (heartbeat_timeout)"
            )
        else:
            beat = f" (it beats every {self.heartbeat:g} s)" if self.heartbeat else ""
            message = (
                f"the producer of Redis stream {self.key!r} stopped before the end: no entry "
                f"and no heartbeat for {seconds:g} s{beat}, after {self.items} item(s) "
                f"(last entry {self.position!r})"
            )
        return StreamTimeoutError("heartbeat", seconds, message)

    # ------------------------------------------------------------- helpers

    def _seen(self, entry: Entry) -> None:
        parsed = parse_id(entry.id)
        if parsed is not None and (self.newest_ms is None or parsed[0] > self.newest_ms):
            self.newest_ms = parsed[0]

    def _number(self, entry: Entry) -> int:
        try:
            return wire.entry_number(entry.fields)
        except ValueError as exc:
            raise self._unreadable(entry, exc) from None

    def _kind(self, entry: Entry) -> str:
        try:
            return wire.entry_kind(entry.fields)
        except ValueError as exc:
            raise self._unreadable(entry, exc) from None

    def _json(self, entry: Entry) -> Any:
        try:
            return wire.read_json(entry.fields.get("data"))
        except ValueError as exc:
            raise self._unreadable(entry, exc) from None

    def _item(self, entry: Entry) -> Any:
        obj = self._json(entry)
        try:
            return wire.decode(obj)
        except ValueError as exc:
            raise StoredStreamError(
                self.key,
                f"entry {entry.id!r} holds no item this rxstream can read ({exc})",
                after=self.position,
            ) from None

    def _unreadable(self, entry: Entry, exc: ValueError) -> StoredStreamError:
        # The wire's reasons read "it ...": "entry '5-0' has no number: ...".
        reason = str(exc).removeprefix("it ")
        return StoredStreamError(self.key, f"entry {entry.id!r} {reason}", after=self.position)

    def _start(self, entry: Entry) -> None:
        obj = self._json(entry)
        beat = obj.get("heartbeat") if isinstance(obj, dict) else None
        if isinstance(beat, int | float):
            self.heartbeat = float(beat)

    def _finish(self, entry: Entry, kind: str) -> None:
        self.done = True
        if kind == "error":
            obj = self._json(entry)
            if not isinstance(obj, dict):
                raise StoredStreamError(
                    self.key,
                    f"error entry {entry.id!r} holds no error object: {excerpt(repr(obj))}",
                    after=self.position,
                )
            self.failure = wire.decode_error(obj)

    def _gap(self, entry: Entry, number: int) -> None:
        raise self._gone(number, entry.id)

    def _gone(self, number: int, entry_id: str) -> StoredStreamError:
        """The entries from the one expected up to `number` (whose id is `entry_id`), gone."""
        first, last = self.expected, number - 1
        what = f"entry {first} is" if first == last else f"entries {first} to {last} are"
        where = (
            "before the first entry this reader read"
            if self.position == "0-0"
            else f"between ids {self.position!r} and {entry_id!r}"
        )
        return StoredStreamError(
            self.key,
            f"{what} gone ({last - first + 1} in all, {where}) before this reader read "
            "them: trimmed by MAXLEN (a follower slower than maxlen allows, or one that "
            "started late) or lost in a restart of Redis",
            after=self.position,
            missing=(first, last),
        )


def _before(a: str, b: str) -> bool:
    pa, pb = parse_id(a), parse_id(b)
    return pa is not None and pb is not None and pa < pb
