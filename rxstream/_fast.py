"""Every speed shortcut rxstream takes, in one place, and the one switch that turns them all off.

The machines keep the contract `feed` / `close` / `done` (and `feed_all`, the
batch form of `feed`); what follows only shortens the route, never changes
what comes out (items, errors and their messages, `done`, disposal):

- **fusion**: `fuse(machines)` merges adjacent machines of one operator chain
  where a pair in `_pairs()` knows a shortcut: `SSEParser` hands the data of a
  `"message"` frame to the decoder below as a bare `str` (no `SSEFrame`
  built), and `ChunkDecoder` gives the deltas itself when a `DeltaDecoder` is
  below it (each chunk read once); a `TokenCounter` takes the chunks through
  the `DeltaDecoder` in front of it itself, so deltas skip the decoder; in
  front of the anthropic, openai-responses and cohere decoders, the parser
  hands every frame over as an `(event, data)` tuple; and behind a decoder
  that gives deltas only (every dialect's but the chat chunk decoder's), the
  `DeltaDecoder` the delta operators put in front of their machine is left
  out;
- **typed decoding**: `typed(dialect)` gives a decoder its dialect's module
  of `rxstream._typed` (msgspec Structs for the usual events, the `fast`
  extra);
- **the shared reader**: fused that way, the chunk decoder reads the chunks
  with the delta decoder's `ChunkReader`, which a message accumulator behind
  it may share;
- **JSON**: `loaders()` gives a decoder msgspec (the `fast` extra) and then
  the C scanner behind `json.loads` called directly, with `json.loads` having
  the last word on whatever they refuse;
- **constructors**: `constructor(cls)` builds a frozen slotted item with
  plain attribute stores instead of the dataclass's `__init__`.

`Chained` (two machines as one) is the plain machine-after-machine chaining
the operator plumbing runs on with or without the shortcuts; `last_machine`
finds the machine a chain ends with, wherever fusion put it.

Turning the fast paths off (to debug: a breakpoint in `DeltaDecoder.feed`
then hits for `lines(), sse_frames(), decode_chunks(), deltas(), ...`):

- set the environment variable `RXSTREAM_NO_FAST=1` before rxstream is
  imported; or
- call `rxstream.core.fast_paths(False)` (and `fast_paths(True)` to turn them
  back on). It takes effect for machines and operator subscriptions built
  afterwards, and for the constructors at once.

With them off: no fusion beyond plain chaining, each machine fed one item at
a time through its own `feed` (as a `for` loop would), no shared reader,
`json.loads` for all JSON, and each item built by its dataclass's own
`__init__`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import types
from collections.abc import Callable, Iterable
from functools import cache
from json.scanner import make_scanner
from typing import TYPE_CHECKING, Any, TypeVar

from .models import JSON

if TYPE_CHECKING:  # the machines import this module; it imports none of them at import
    from .core import Feeder

__all__ = [
    "ENV_VAR",
    "Chained",
    "chain",
    "constructor",
    "enabled",
    "fast_paths",
    "fuse",
    "fuse_pair",
    "last_machine",
    "loaders",
    "scan_loads",
    "takes_strings",
    "typed",
]

T = TypeVar("T")

#: The environment variable that, set to anything but "" or "0", turns every shortcut off at import.
ENV_VAR = "RXSTREAM_NO_FAST"

_on: bool = os.environ.get(ENV_VAR, "").strip() in ("", "0")


def enabled() -> bool:
    """Whether the fast paths are on (see the module docstring)."""
    return _on


def fast_paths(enabled: bool) -> bool:
    """Turn every speed shortcut on or off; return the previous setting.

    Machines and operator subscriptions built afterwards follow the new
    setting, and so do the item constructors, at once. Results are the same
    either way: turn them off to step through the plain machine code (a
    breakpoint in `DeltaDecoder.feed` then hits), or set `RXSTREAM_NO_FAST=1`
    before importing rxstream.

    Args:
        enabled: True for the shortcuts (the default), False for none.

    Returns:
        Whether they were on before the call.

    >>> previous = fast_paths(False)
    >>> fast_paths(previous)
    False
    """
    global _on
    if not isinstance(enabled, bool):
        raise TypeError(f"fast_paths takes True or False, not {enabled!r}")
    previous, _on = _on, enabled
    for build, fast, plain in _constructors:
        build.__code__ = fast if enabled else plain
    return previous


# --------------------------------------------------------------------------- constructors
#
# A frozen dataclass's `__init__` sets each field through `object.__setattr__`,
# which looks the slot up again every time; on the hot path that costs about
# twice what the item needs. The generated `build` instead fills an instance
# of a plain "shadow" class with the very same slots (ordinary attribute
# stores, the cheapest write Python has), then makes it an instance of `cls`
# (Python allows assigning `__class__` between classes of one memory layout).
# The item is the same object `cls(...)` gives. The switch swaps the code of
# each `build` for a plain `cls(...)` call, so a module that bound a
# constructor at import follows it without a lookup per item.

_constructors: list[tuple[types.FunctionType, types.CodeType, types.CodeType]] = []


def constructor(cls: type[T]) -> Callable[..., T]:
    """A positional constructor for `cls`, equal in result to calling `cls`.

    Only a plain frozen, slotted dataclass without `__post_init__` gets the
    shortcut; for anything else this returns the class itself.

    >>> from rxstream.models import TextDelta
    >>> constructor(TextDelta)("hi", 0) == TextDelta("hi", 0)
    True
    """
    if not dataclasses.is_dataclass(cls) or hasattr(cls, "__post_init__"):
        return cls
    params = getattr(cls, "__dataclass_params__", None)
    names = [f.name for f in dataclasses.fields(cls)]
    if not getattr(params, "frozen", False) or tuple(getattr(cls, "__slots__", ())) != tuple(names):
        return cls
    shadow = type(f"_{cls.__name__}Shadow", (), {"__slots__": tuple(names)})
    namespace: dict[str, Any] = {"new": object.__new__, "cls": cls, "shadow": shadow}
    args = ", ".join(f"f{i}" for i in range(len(names)))
    try:
        probe: Any = object.__new__(shadow)
        probe.__class__ = cls
    except TypeError:  # pragma: no cover - no rxstream item has a slotted base
        for i, name in enumerate(names):
            namespace[f"set{i}"] = cls.__dict__[name].__set__
        body = "".join(f"    set{i}(item, f{i})\n" for i in range(len(names)))
        fast = f"def build({args}):\n    item = new(cls)\n{body}    return item\n"
    else:
        body = "".join(f"    item.{name} = f{i}\n" for i, name in enumerate(names))
        fast = (
            f"def build({args}):\n    item = new(shadow)\n{body}"
            "    item.__class__ = cls\n    return item\n"
        )
    plain = f"def plain({args}):\n    return cls({args})\n"
    # Generated like dataclasses' own __init__, so each store is one instruction.
    exec(fast + plain, namespace)
    build: types.FunctionType = namespace["build"]
    build.__qualname__ = build.__name__ = f"build_{cls.__name__}"
    fast_code = build.__code__
    plain_code = namespace["plain"].__code__.replace(co_name=build.__name__)
    _constructors.append((build, fast_code, plain_code))
    if not _on:
        build.__code__ = plain_code
    made: Callable[..., T] = build
    return made


# --------------------------------------------------------------------------- JSON

# The C scanner behind json.loads, called directly: for the usual frame (one
# JSON object, no surrounding blanks) it gives what json.loads gives, without
# json.loads's Python-level checks and two regex passes. Anything else goes
# through json.loads itself, which then owns the result and the message.
# (typeshed types make_scanner's argument wrongly; a JSONDecoder is what it takes.)
_scan_once = make_scanner(json.JSONDecoder())  # type: ignore[arg-type]


def scan_loads(data: str) -> JSON:
    """`json.loads`, with the direct scanner first for the usual whole-object text."""
    if type(data) is str:
        try:
            value, end = _scan_once(data, 0)
        except (ValueError, StopIteration):
            pass
        else:
            if end == len(data):
                return value
    return json.loads(data)


def _load_msgspec() -> Callable[[str], JSON] | None:
    try:  # msgspec is the optional `fast` extra.
        import msgspec
    except ImportError:  # pragma: no cover - depends on the environment
        return None
    # Its DecodeError is a ValueError, and whatever it refuses (NaN, 1e400,
    # lone surrogates, ...) is decoded again by the standard library, which
    # has the last word: the results and the messages are json's.
    decode: Callable[[str], JSON] = msgspec.json.Decoder().decode
    return decode


#: The optional first loader (msgspec), or None. Set it to None (as the tests
#: do) to run the standard-library path only; `loaders()` reads it when a
#: decoder is built. msgspec was picked over orjson by measurement, and
#: because orjson turns integers past 64 bits into floats.
msgspec_loads: Callable[[str], JSON] | None = _load_msgspec()


def loaders() -> tuple[Callable[[str], JSON] | None, Callable[[str], JSON]]:
    """The JSON loaders for a decoder being built: (a first try or None, the standard one).

    A decoder tries the first (msgspec), and on a `ValueError` the standard
    one, whose result and message count. With the fast paths off: `(None,
    json.loads)`.
    """
    if not _on:
        return None, json.loads
    return msgspec_loads, scan_loads


def typed(dialect: str) -> types.ModuleType | None:
    """The typed (msgspec) decoding module of a dialect for a decoder being built, or None.

    `dialect` names a module of `rxstream._typed` (the dialect's package
    name, e.g. `"gemini"`). None when the fast paths are off, when msgspec is
    not installed or `msgspec_loads` was set to None (the standard-library
    path), or when the dialect has no typed module. A typed module decodes the
    events a dialect usually sends straight into msgspec types; whatever its
    types do not know goes to the decoder's general path, never to a drop, so
    the items and errors are the same either way.
    """
    if not _on or msgspec_loads is None:
        return None
    return _typed_module(dialect)


@cache
def _typed_module(dialect: str) -> types.ModuleType | None:
    import importlib

    try:
        return importlib.import_module(f"rxstream._typed.{dialect}")
    except ModuleNotFoundError as error:
        if error.name != f"rxstream._typed.{dialect}":
            raise
        return None


# --------------------------------------------------------------------------- chaining


class Chained:
    """Two machines as one: what the upper one gives goes straight into the lower one.

    It gives what the two give in a row, errors and `done` included: the lower
    one gets the upper one's output (also what came before an error); when
    the upper one is done, the lower one is closed at once; when the lower one
    is done, so is the pair. `close_into(out)` is `close()` that keeps what
    came out before an error, as `feed_all` does.

    >>> from rxstream.core import LineSplitter, SSEParser
    >>> pair = Chained(LineSplitter(), SSEParser())
    >>> [frame.data for frame in pair.feed("data: hi\\n\\n")]
    ['hi']
    """

    __slots__ = ("_lower", "_lower_closed", "_upper")

    def __init__(self, upper: Feeder[Any, Any], lower: Feeder[Any, Any]) -> None:
        self._upper: Any = _batched(upper)
        self._lower: Any = _batched(lower)
        self._lower_closed = False

    @property
    def parts(self) -> tuple[Any, Any]:
        """The upper machine and the lower one."""
        return self._upper, self._lower

    @property
    def done(self) -> bool:
        """True once either machine is done."""
        return bool(self._upper.done or self._lower.done)

    def feed(self, item: Any) -> list[Any]:
        """Feed one item through both machines."""
        out: list[Any] = []
        self.feed_all((item,), out)
        return out

    def feed_all(self, items: Iterable[Any], out: list[Any]) -> None:
        """Feed many items through both machines."""
        middle: list[Any] = []
        try:
            self._upper.feed_all(items, middle)
        except Exception:
            if middle:
                self._lower.feed_all(middle, out)
                if self._lower.done:
                    return  # the lower one ended the stream before the error mattered
            raise
        if middle:
            self._lower.feed_all(middle, out)
        if self._upper.done and not self._lower_closed:
            self._close_lower(out)

    def close(self) -> list[Any]:
        """Close the upper machine, then the lower one (unless it is done or closed)."""
        out: list[Any] = []
        self.close_into(out)
        return out

    def close_into(self, out: list[Any]) -> None:
        """`close()`, appending to `out` (which keeps what came before an error)."""
        if self._lower_closed:
            # The upper machine was done, and the lower one closed then.
            self._upper.close()
            return
        middle = list(self._upper.close())
        if middle:
            self._lower.feed_all(middle, out)
            if self._lower.done:
                return
        if not self._lower_closed:
            self._close_lower(out)

    def _close_lower(self, out: list[Any]) -> None:
        self._lower_closed = True
        lower = self._lower
        if type(lower) is Chained:
            lower.close_into(out)
        else:
            out += lower.close()


class _Batch:
    """A `Feeder` given what it lacks of the whole contract: `feed_all` and `done`."""

    __slots__ = ("_machine", "close", "feed_all")

    def __init__(self, machine: Feeder[Any, Any]) -> None:
        self._machine = machine
        self.close = machine.close
        feed_all = getattr(machine, "feed_all", None)
        self.feed_all: Callable[[Iterable[Any], list[Any]], None] = feed_all or self._feed_each

    @property
    def done(self) -> bool:
        return bool(getattr(self._machine, "done", False))

    def _feed_each(self, items: Iterable[Any], out: list[Any]) -> None:
        feed = self._machine.feed
        for item in items:
            out += feed(item)


class _Each:
    """A machine fed one item at a time through its own `feed` (the fast paths off).

    What a plain `for` loop over the machine does: `feed` per item, stopping
    once `done`; an error leaves in `out` what the items before it gave.
    (`EventStreamParser.feed` reports a broken message on the next `feed` or
    at `close()`, so there the error comes one read later, after the same
    messages.)
    """

    __slots__ = ("_machine", "close")

    def __init__(self, machine: Feeder[Any, Any]) -> None:
        self._machine = machine
        self.close = machine.close

    @property
    def done(self) -> bool:
        return bool(getattr(self._machine, "done", False))

    def feed_all(self, items: Iterable[Any], out: list[Any]) -> None:
        machine = self._machine
        for item in items:
            out += machine.feed(item)
            if getattr(machine, "done", False):
                break


def _batched(machine: Feeder[Any, Any]) -> Any:
    """The machine as chaining runs it: itself when it has the whole contract, else adapted."""
    if type(machine) in (Chained, _Each, _Batch):
        return machine
    if not _on:
        return _Each(machine)
    if hasattr(type(machine), "feed_all") and hasattr(type(machine), "done"):
        return machine
    return _Batch(machine)


def chain(machines: list[Feeder[Any, Any]]) -> Any:
    """The machines, first to last, as one (`Chained`, nested), fused where the fast paths allow.

    What the operator plumbing runs: `feed_all`, `done` and `close` (for a
    `Chained`, `close_into`) on the result give what the machines give in a
    row.
    """
    run = fuse(machines)
    whole = _batched(run[-1])
    for machine in reversed(run[:-1]):
        whole = Chained(machine, whole)
    return whole


# --------------------------------------------------------------------------- inspection


def last_machine(whole: Any) -> object:
    """The last machine of the chain `whole` (from `chain`), as it was built (not adapted)."""
    while isinstance(whole, Chained):
        whole = whole._lower
    return whole._machine if type(whole) in (_Each, _Batch) else whole


def behind_deltas(machines: list[Feeder[Any, Any]]) -> list[Feeder[Any, Any]]:
    """The machines of a run fed by a source of deltas only (`DeltaSource`): the
    `DeltaDecoder` in front of the first one (which passes deltas on as they are) left
    out, as behind a dialect decoder (the pair table's `passed`). None left out when off.
    """
    if not _on or not machines:
        return machines
    from .core.dialects.openai_chat.deltas import DeltaDecoder

    first = machines[0]
    if type(first) is DeltaDecoder and first.pristine:
        return machines[1:] or machines
    if type(first) is Chained:
        upper, lower = first.parts
        if type(upper) is DeltaDecoder and upper.pristine:
            return [lower, *machines[1:]]
    return machines


# --------------------------------------------------------------------------- fusion


def fuse(machines: list[Feeder[Any, Any]]) -> list[Feeder[Any, Any]]:
    """Merge each machine with the one below it where a pair knows a shortcut (none when off).

    Asked once, before any input. Returns the run of machines to chain, the
    same length or shorter.
    """
    machines = list(machines)
    if not _on:
        return machines
    k = 0
    while k < len(machines) - 1:
        merged = fuse_pair(machines[k], machines[k + 1])
        if merged is None:
            k += 1
        else:
            machines[k : k + 2] = [merged]
    return machines


def fuse_pair(upper: object, lower: object) -> Any:
    """The machine standing for `upper` feeding `lower`, or None when no shortcut applies."""
    if type(upper) is Chained:
        # The pair's lower machine may take the machine below the pair as its own.
        merged = fuse_pair(upper._lower, lower)
        if merged is None:
            return None
        upper._lower = merged
        return upper
    types_: tuple[Any, Any] = (type(upper), type(lower))  # (no Hashable to mypy as type[object])
    how = _shortcut(*types_)
    return None if how is None else how(upper, lower)


@cache
def _shortcut(upper: type, lower: type) -> Callable[..., Any] | None:
    """How to fuse a machine of type `upper` feeding one of type `lower`, or None.

    The first pair of `_pairs()` they are of; asked once per pair of types
    (each stream's pipeline asks for each of its pairs).
    """
    for upper_types, lower_types, how in _pairs():
        if issubclass(upper, upper_types) and issubclass(lower, lower_types):
            return how
    return None


def takes_strings(decoder: object) -> bool:
    """Whether `decoder` (picked by `AutoDecoder` behind a fused parser) takes bare strings now."""
    from .core.dialects.gemini.decode import GeminiDecoder
    from .core.dialects.openai_chat.chunks import ChatFrameDecoder

    return isinstance(decoder, ChatFrameDecoder | GeminiDecoder) and decoder._take_strings()


_Types = type | tuple[type, ...]


@cache
def _pairs() -> tuple[tuple[_Types, _Types, Callable[..., Any]], ...]:
    """(upper type, lower type, how to fuse) for every pair that knows a shortcut.

    Imported on first use: the machines themselves import this module.
    """
    from .core.dialects import AutoDecoder
    from .core.dialects.anthropic.decode import AnthropicDecoder
    from .core.dialects.bedrock.decode import BedrockDecoder
    from .core.dialects.cohere.decode import CohereDecoder
    from .core.dialects.gemini.decode import GeminiDecoder
    from .core.dialects.ollama.decode import OllamaDecoder
    from .core.dialects.openai_chat.chunks import ChatFrameDecoder
    from .core.dialects.openai_chat.deltas import DeltaDecoder
    from .core.dialects.openai_responses.decode import ResponsesDecoder
    from .core.eventstream import EventStreamParser
    from .core.message import MessageAccumulator
    from .core.sse import SSEParser
    from .core.tokens import TokenCounter

    def strings(parser: SSEParser, below: Any) -> Chained | None:
        # The parser hands the data of a "message" frame over as a bare str:
        # the decoders below read nothing else of such a frame.
        if not (parser._can_hand_strings() and below._take_strings()):
            return None
        parser._hand_strings()
        return Chained(parser, below)

    def deltas(decoder: ChatFrameDecoder, below: DeltaDecoder) -> ChatFrameDecoder | None:
        # The chunk decoder gives the deltas itself, reading each chunk with
        # the delta decoder's reader (which a message accumulator may share).
        if type(below) is not DeltaDecoder or not below.pristine:
            return None
        return decoder if decoder._give_deltas(below.reader) else None

    def accumulate(decoder: ChatFrameDecoder, below: MessageAccumulator) -> Chained | None:
        # Chunks into the accumulator: the decoder gives their deltas, and the
        # accumulator reads roles and choices through the decoder's reader.
        if type(below) is not MessageAccumulator or not below.pristine:
            return None
        gave_deltas = decoder._deltas
        if not decoder._give_deltas(None):
            return None
        if not gave_deltas:
            below._read_chunks_with(decoder._reader)
        return Chained(decoder, below)

    def adapter(decoder: ChatFrameDecoder, below: Chained) -> Any:
        # A delta decoder in front of a machine that takes deltas (what the
        # operators over the accumulators build for chunk input).
        upper, lower = below.parts
        if type(upper) is not DeltaDecoder or deltas(decoder, upper) is None:
            return None
        return fuse_pair(decoder, lower) or Chained(decoder, lower)

    def count(decoder: DeltaDecoder, below: TokenCounter) -> TokenCounter | None:
        # The token counter takes the chunks through the decoder itself, and
        # the deltas (nearly every item) skip it.
        if type(decoder) is not DeltaDecoder or not (decoder.pristine and below.pristine):
            return None
        if below.chunk_decoder is not None:
            return None
        below._read_chunks_with(decoder)
        return below

    def counted(decoder: ChatFrameDecoder, below: TokenCounter) -> Chained | None:
        # A chunk decoder in front of that counter gives the deltas, read with
        # the counter's decoder's reader.
        inner = below.chunk_decoder
        if inner is None or deltas(decoder, inner) is None:
            return None
        return Chained(decoder, below)

    def pairs(parser: SSEParser | EventStreamParser, below: Any) -> Chained | None:
        # The parser hands each frame over as an (event, data) tuple (an
        # event-stream message as (headers, payload)): the decoders below read
        # nothing else of one, and build it where they need it.
        if not (parser._can_hand_pairs() and below._take_pairs()):
            return None
        parser._hand_pairs()
        return Chained(parser, below)

    def passed(decoder: Any, below: Any) -> Any:
        # A dialect decoder gives deltas only, which the delta decoder in
        # front of a machine that takes deltas passes on as they are: left out.
        if type(below) is DeltaDecoder:
            return decoder if below.pristine else None
        if type(below) is Chained:
            upper, lower = below.parts
            if type(upper) is DeltaDecoder and upper.pristine:
                return fuse_pair(decoder, lower) or Chained(decoder, lower)
        return None

    takes_strings = (ChatFrameDecoder, AutoDecoder, GeminiDecoder)
    takes_pairs = (AnthropicDecoder, CohereDecoder, ResponsesDecoder)
    gives_deltas = (*takes_pairs, GeminiDecoder, OllamaDecoder, BedrockDecoder)
    return (
        (SSEParser, takes_strings, strings),
        (SSEParser, takes_pairs, pairs),
        (EventStreamParser, BedrockDecoder, pairs),
        (gives_deltas, (DeltaDecoder, Chained), passed),
        (ChatFrameDecoder, DeltaDecoder, deltas),
        (ChatFrameDecoder, MessageAccumulator, accumulate),
        (ChatFrameDecoder, Chained, adapter),
        (ChatFrameDecoder, TokenCounter, counted),
        (DeltaDecoder, TokenCounter, count),
    )
