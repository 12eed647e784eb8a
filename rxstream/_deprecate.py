"""Old spellings of public names, kept working for one release with a warning.

Every old spelling goes through this module, and every warning has the one
wording of `deprecation_message`: "`old` is deprecated, use `new` (it will be
removed in the next release)", issued as a `DeprecationWarning` at the user's
line (`stacklevel`).

- `deprecated_arguments`: a decorator for renamed keywords and for optional
  arguments that became keyword-only; the call is rewritten to the new
  spelling. Giving both spellings is a `TypeError`, as giving one argument
  twice is.
- `moved_names`: a module `__getattr__` for names that moved (whole modules
  kept as shims, single names such as a renamed constant or function).
- `warn_deprecated`: the warning itself, for what the two cannot express (a
  property, an argument whose value changed meaning). The command line
  prints `deprecation_message` on stderr instead (its users see no warnings).

Every spelling handled here is listed in the CHANGELOG's migration section
(tests/test_deprecations.py reads that table) and goes away in the next release.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ParamSpec, TypeVar, cast

__all__ = [
    "REMOVAL",
    "deprecated_arguments",
    "deprecation_message",
    "moved_names",
    "warn_deprecated",
]

P = ParamSpec("P")
R = TypeVar("R")

#: What every warning ends with: when the old spelling stops working.
REMOVAL = "it will be removed in the next release"


def deprecation_message(old: str, new: str, *, where: str | None = None) -> str:
    """The one wording of every deprecation: `old` is deprecated, use `new`.

    Args:
        old: the old spelling (`"format="`, `"rxstream.core.codec.encode"`).
        new: the spelling to use instead.
        where: the function, class or command the spelling belongs to
            (`"to_sse()"`), written first; None when `old` says it.

    >>> deprecation_message("format=", "dialect=", where="to_sse()")
    'to_sse(): format= is deprecated, use dialect= (it will be removed in the next release)'
    """
    prefix = f"{where}: " if where else ""
    return f"{prefix}{old} is deprecated, use {new} ({REMOVAL})"


def warn_deprecated(old: str, new: str, *, where: str | None = None, stacklevel: int = 2) -> None:
    """Warn (`DeprecationWarning`) that `old` is now spelled `new`.

    Args:
        old: the old spelling; new: the new one; where: see `deprecation_message`.
        stacklevel: as for `warnings.warn`, counted from the caller of this
            function: 2 (the default) points at whoever called that caller.
    """
    warnings.warn(
        deprecation_message(old, new, where=where), DeprecationWarning, stacklevel=stacklevel + 1
    )


def moved_names(module: str, moved: Mapping[str, str | tuple[str, Any]]) -> Callable[[str], Any]:
    """A module `__getattr__` that gives each moved name, with a warning at every use.

    Args:
        module: the old module's name (`__name__`).
        moved: old name -> where it lives now, as `"package.module"` (same
            name) or `"package.module:name"`, imported on first use so the old
            module loads nothing; or `(new spelling, object)` when the object
            given is not the new one itself (an adapter keeping an old
            argument order).

    Returns:
        The function to assign to the old module's `__getattr__` (under
        `if not TYPE_CHECKING:`, so type checkers keep flagging unknown names).
    """

    def __getattr__(name: str) -> Any:
        target = moved.get(name)
        if target is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        if isinstance(target, tuple):
            new, value = target
            warn_deprecated(f"{module}.{name}", new, stacklevel=2)
            return value
        home, _, attribute = target.partition(":")
        warn_deprecated(f"{module}.{name}", f"{home}.{attribute or name}", stacklevel=2)
        return getattr(importlib.import_module(home), attribute or name)

    return __getattr__


def deprecated_arguments(
    *, renamed: Mapping[str, str] | None = None, positional: Sequence[str] = ()
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Accept old spellings of a function's arguments, with a `DeprecationWarning`.

    Args:
        renamed: old keyword -> new keyword (`{"format": "dialect"}`).
        positional: the keyword-only parameters that used to be positional,
            in their old order after the parameters that are still positional
            (`("scheduler",)` for `coalesce(interval, *, scheduler=None)`).

    Returns:
        A decorator; the decorated function keeps its signature and docstring.
    """
    renames = dict(renamed or {})
    moved = tuple(positional)

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        parameters = inspect.signature(function).parameters.values()
        kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        positional_names = [p.name for p in parameters if p.kind in kinds]
        still_positional = len(positional_names)
        name = function.__qualname__.removesuffix(".__init__")

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if len(args) > still_positional and moved:
                args = _keywords_from_positions(name, args, kwargs, still_positional, moved)
            for old, new in renames.items():
                if old in kwargs:
                    if new in kwargs or new in positional_names[: len(args)]:
                        raise TypeError(
                            f"{name}() got both {old}= and {new}=; {old}= is the deprecated "
                            f"spelling of {new}=, give only {new}="
                        )
                    warn_deprecated(f"{old}=", f"{new}=", where=f"{name}()", stacklevel=2)
                    kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        return cast(Callable[P, R], wrapper)

    return decorate


def _keywords_from_positions(
    name: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    still_positional: int,
    moved: tuple[str, ...],
) -> tuple[Any, ...]:
    extra = args[still_positional:]
    if len(extra) > len(moved):
        raise TypeError(
            f"{name}() takes at most {still_positional + len(moved)} positional arguments "
            f"({len(args)} given)"
        )
    names = moved[: len(extra)]
    for key, value in zip(names, extra, strict=True):
        if key in kwargs:
            raise TypeError(f"{name}() got multiple values for argument {key!r}")
        kwargs[key] = value
    shown = ", ".join(f"{key}=" for key in names)
    warn_deprecated(
        f"passing {shown} positionally", f"{shown} by keyword", where=f"{name}()", stacklevel=3
    )
    return args[:still_positional]
