"""Why two marble recordings differ, told as marble diagrams.

Input: the records a test got (`StreamMarbles.start`) and the records it
expected (`StreamMarbles.expected`), as `reactivex.testing` `Recorded` lists.
Output: the lines of a failure message: both recordings as diagrams with
ticks counted from the subscription (tick 200 is position 0), the first
record where they part, and a legend of the symbols.

The difference is the one the assertion saw: records are compared as
`Recorded.__eq__` compares them (time, then notification), items by their own
`==`. A field a dataclass leaves out of equality (`Finish.raw`) is never shown
as the difference; the time is, when that is what differs.

The rxstream pytest plugin shows these lines when `assert got == expected`
fails on two recordings; `explain` gives them to any other test runner.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from reactivex.notification import Notification, OnCompleted, OnError, OnNext
from reactivex.testing.recorded import Recorded

__all__ = ["ExpectedRecords", "explain", "is_recording"]

#: Where `StreamMarbles.start` subscribes: position 0 of every diagram shown.
_SUBSCRIBED = 200
#: Symbols handed to items the value map does not name, in this order.
_FREE = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
#: The longest repr a message quotes of one item.
_EXCERPT = 160


class ExpectedRecords(list[Recorded[Any]]):
    """The records `StreamMarbles.expected` returns: a plain list that remembers its value map.

    It compares as the list it is; the map lets a failure message print each
    item with the symbol the test wrote for it.
    """

    def __init__(self, records: Sequence[Recorded[Any]], values: Mapping[str, Any]) -> None:
        super().__init__(records)
        self.values = dict(values)


def is_recording(value: object) -> bool:
    """Whether `value` is a list of `Recorded` notifications (what marble tests compare)."""
    return isinstance(value, list) and all(isinstance(record, Recorded) for record in value)


def explain(
    actual: Sequence[Recorded[Any]],
    expected: Sequence[Recorded[Any]],
    values: Mapping[str, Any] | None = None,
) -> list[str]:
    """The lines that say how `actual` differs from `expected`, as marble diagrams.

    Args:
        actual: the records the test got.
        expected: the records it expected.
        values: the marble value map; its symbols name the items (others get
            free letters). Taken from `expected` when that came from
            `StreamMarbles.expected` and none is given.

    Returns:
        The message lines; the first says where the recordings part.

    >>> from reactivex.notification import OnCompleted, OnNext
    >>> got = [Recorded(201, OnNext("x")), Recorded(203, OnCompleted())]
    >>> want = [Recorded(201, OnNext("x")), Recorded(204, OnCompleted())]
    >>> print("\\n".join(explain(got, want, {"a": "x"})))
    record 1 differs: completion came at tick 3, expected at tick 4
      expected: -a--|
      actual:   -a-|
      ticks count from the subscription (tick 200); the symbols:
        a = 'x'
    """
    if values is None and isinstance(expected, ExpectedRecords):
        values = expected.values
    legend = _Legend(values or {})
    # The diagrams first: symbols are handed out in the order they are drawn.
    drawn = [f"  expected: {_diagram(expected, legend)}", f"  actual:   {_diagram(actual, legend)}"]
    lines = [_first_difference(actual, expected, legend), *drawn]
    used = legend.used()
    lines.append(
        f"  ticks count from the subscription (tick {_SUBSCRIBED})"
        + ("; the symbols:" if used else "")
    )
    lines += [f"    {symbol} = {_excerpt(item)}" for symbol, item in used]
    return lines


class _Legend:
    """Item -> symbol, by the items' own equality: the map's symbols first, then free letters."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self._known = [(symbol, item) for symbol, item in values.items() if len(symbol) == 1]
        self._taken = {symbol for symbol, _ in self._known}
        self._given: list[tuple[str, Any]] = []
        self._used: dict[str, Any] = {}

    def symbol(self, item: object) -> str:
        for symbol, known in (*self._known, *self._given):
            if _equal(known, item):
                self._used.setdefault(symbol, known)
                return symbol
        free = next((s for s in _FREE if s not in self._taken), "?")
        self._taken.add(free)
        self._given.append((free, item))
        self._used[free] = item
        return free

    def used(self) -> list[tuple[str, Any]]:
        return sorted(self._used.items())


def _equal(left: object, right: object) -> bool:
    try:
        return bool(left == right)
    except Exception:  # an item whose == raises is no match, not a crash of the message
        return False


def _tick(time: float) -> str:
    relative = time - _SUBSCRIBED
    return str(int(relative)) if relative == int(relative) else f"{relative:g}"


def _cell(note: Notification[Any] | Any, legend: _Legend) -> str:
    if isinstance(note, OnNext):
        return legend.symbol(note.value)
    return "|" if isinstance(note, OnCompleted) else "#"


def _diagram(records: Sequence[Recorded[Any]], legend: _Legend) -> str:
    """The records as a marble string that `StreamMarbles.expected` reads back."""
    by_tick: dict[int, list[str]] = {}
    for record in records:
        by_tick.setdefault(int(record.time), []).append(_cell(record.value, legend))
    out, position = [], _SUBSCRIBED
    for tick in sorted(by_tick):
        out.append("-" * max(tick - position, 0))
        symbols = by_tick[tick]
        cell = symbols[0] if len(symbols) == 1 else f"({','.join(symbols)})"
        out.append(cell)
        position = max(tick, position) + len(cell)
    return "".join(out) or "(nothing)"


def _first_difference(
    actual: Sequence[Recorded[Any]], expected: Sequence[Recorded[Any]], legend: _Legend
) -> str:
    for index, (got, want) in enumerate(zip(actual, expected, strict=False)):
        if _equal(got, want):
            continue
        return f"record {index} differs: {_difference(got, want, legend)}"
    index = min(len(actual), len(expected))
    if len(actual) > len(expected):
        extra = actual[index]
        return (
            f"record {index} differs: got {_what(extra.value, legend)} at tick "
            f"{_tick(extra.time)}, expected nothing more"
        )
    if len(actual) < len(expected):
        missing = expected[index]
        return (
            f"record {index} differs: expected {_what(missing.value, legend)} at tick "
            f"{_tick(missing.time)}, got nothing more"
        )
    return "the recordings are equal"


def _difference(got: Recorded[Any], want: Recorded[Any], legend: _Legend) -> str:
    at, expected_at = _tick(got.time), _tick(want.time)
    if _equal(got.value, want.value):
        what = _what(got.value, legend)
        return f"{what} came at tick {at}, expected at tick {expected_at}{_ignored(got, want)}"
    when = f"at tick {at}" if at == expected_at else f"at tick {at} (expected at {expected_at})"
    if isinstance(got.value, OnNext) and isinstance(want.value, OnNext):
        return f"item {when}: {_item_difference(got.value.value, want.value.value, legend)}"
    return f"{when}: expected {_what(want.value, legend)}, got {_what(got.value, legend)}"


def _what(note: Any, legend: _Legend) -> str:
    """A notification in words: its symbol and item, completion, or the error."""
    if isinstance(note, OnNext):
        return f"{legend.symbol(note.value)} = {_excerpt(note.value)}"
    if isinstance(note, OnCompleted):
        return "completion"
    if type(note) is OnError:
        return f"the error {_excerpt(note.exception)}"
    return _cut(str(note))  # an expectation: `OnError(like ProviderError(...))`


def _item_difference(got: object, want: object, legend: _Legend) -> str:
    names = f"expected {legend.symbol(want)}, got {legend.symbol(got)}"
    if type(got) is not type(want):
        return f"{names}: expected a {type(want).__name__}, got a {type(got).__name__}"
    if dataclasses.is_dataclass(want) and not isinstance(want, type):
        fields = [
            f"{f.name}: expected {_excerpt(getattr(want, f.name))}, "
            f"got {_excerpt(getattr(got, f.name))}"
            for f in dataclasses.fields(want)
            if f.compare and not _equal(getattr(got, f.name), getattr(want, f.name))
        ]
        if fields:
            return f"{names}: {type(want).__name__} differs in " + "; ".join(fields)
    return f"{names}: expected {_excerpt(want)}, got {_excerpt(got)}"


def _ignored(got: Recorded[Any], want: Recorded[Any]) -> str:
    """Name the fields that differ but that equality leaves out (so not the difference)."""
    if not (isinstance(got.value, OnNext) and isinstance(want.value, OnNext)):
        return ""
    item, other = got.value.value, want.value.value
    if (
        not dataclasses.is_dataclass(item)
        or isinstance(item, type)
        or type(item) is not type(other)
    ):
        return ""
    ignored = [
        f.name
        for f in dataclasses.fields(item)
        if not f.compare and not _equal(getattr(item, f.name), getattr(other, f.name))
    ]
    if not ignored:
        return " (the items are equal)"
    return f" (the items are equal: equality ignores {', '.join(ignored)}, where they differ)"


def _excerpt(value: object) -> str:
    return _cut(repr(value))


def _cut(shown: str) -> str:
    return shown if len(shown) <= _EXCERPT else shown[: _EXCERPT - 3] + "..."
