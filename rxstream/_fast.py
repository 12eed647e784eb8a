"""Every speed shortcut's switch, and the low-level shortcuts themselves.

The machines keep the contract `feed` / `close` / `done` (and `feed_all`, the
batch form of `feed`); the shortcuts only shorten the route, never change
what comes out (items, errors and their messages, `done`, disposal). This
module sits below the core and imports none of it; what it holds:

- **the switch**: `enabled()`, `fast_paths(on)`, `RXSTREAM_NO_FAST`;
- **JSON**: `loaders()` gives a decoder msgspec (the `fast` extra) and then
  the C scanner behind `json.loads` called directly, with `json.loads` having
  the last word on whatever they refuse;
- **constructors**: `constructor(cls)` builds a frozen slotted item with
  plain attribute stores instead of the dataclass's `__init__`.

The typed decoding of the `fast` extra (msgspec Structs for each dialect's
usual events) sits just above, in `rxstream._typed` (`typed(dialect)`),
which reads this switch. The fusion of adjacent machines (a parser handing bare strings or pairs to
the decoder below, the chat chunk decoder giving deltas with a shared
reader, a delta decoder left out behind a decoder that gives deltas only) is
declared by the machines themselves and done where pipelines are assembled:
`rxstream.core.pipeline` (`chain`, `fuse`), which reads `enabled()`.

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
from collections.abc import Callable
from json.scanner import make_scanner
from typing import Any, TypeVar

from .models import JSON

__all__ = [
    "ENV_VAR",
    "constructor",
    "enabled",
    "fast_paths",
    "loaders",
    "scan_loads",
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
