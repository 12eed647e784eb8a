"""Old spellings of public arguments, kept working for one release with a warning.

One decorator, `deprecated_arguments`, does it for every renamed keyword and
for every optional argument that became keyword-only: the call is rewritten
to the new spelling and a `DeprecationWarning` names the old and the new, at
the user's line (`stacklevel`). Giving both spellings is a `TypeError`, as
giving one argument twice is. Every spelling handled here is listed in the
CHANGELOG's migration section and goes away in the next release.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ParamSpec, TypeVar, cast

__all__ = ["deprecated_arguments", "warn_renamed"]

P = ParamSpec("P")
R = TypeVar("R")

#: What every warning ends with: when the old spelling stops working.
REMOVAL = "it will be removed in the next release"


def warn_renamed(where: str, old: str, new: str, *, stacklevel: int = 2) -> None:
    """Warn that `old` (an argument, an option) of `where` is now spelled `new`."""
    warnings.warn(
        f"{where}: {old} is deprecated, use {new} ({REMOVAL})",
        DeprecationWarning,
        stacklevel=stacklevel + 1,
    )


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
                    warn_renamed(f"{name}()", f"{old}=", f"{new}=", stacklevel=2)
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
    warnings.warn(
        f"{name}(): passing {shown} positionally is deprecated, give it by keyword ({REMOVAL})",
        DeprecationWarning,
        stacklevel=3,
    )
    return args[:still_positional]
