"""Cheaper constructors for the frozen items built once per chunk.

A frozen dataclass's `__init__` sets each field through `object.__setattr__`,
which looks the slot up again every time; on the hot path that costs about
twice what the item needs. `constructor(cls)` returns a function taking the
fields positionally that builds the item the cheap way: an instance of a
plain "shadow" class with the very same slots gets its fields with ordinary
attribute stores (the cheapest write Python has), then becomes an instance
of `cls` (Python allows assigning `__class__` between classes of one memory
layout). The item built is the same object a call to `cls(...)` gives (same
class, same values, same equality and hash, as frozen): only the route to it
is shorter.

The shortcut is taken only for a plain frozen, slotted dataclass without
`__post_init__`; for anything else `constructor` returns the class itself.
Where the shadow cannot become a `cls` (a base class with slots of its own),
the slots are filled through their descriptors instead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["constructor"]

T = TypeVar("T")


def constructor(cls: type[T]) -> Callable[..., T]:
    """A positional constructor for `cls`, equal in result to calling `cls`.

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
        source = f"def build({args}):\n    item = new(cls)\n{body}    return item\n"
    else:
        body = "".join(f"    item.{name} = f{i}\n" for i, name in enumerate(names))
        source = (
            f"def build({args}):\n    item = new(shadow)\n{body}"
            "    item.__class__ = cls\n    return item\n"
        )
    # Generated like dataclasses' own __init__, so each store is one instruction.
    exec(source, namespace)
    build: Callable[..., T] = namespace["build"]
    build.__qualname__ = build.__name__ = f"build_{cls.__name__}"
    return build
