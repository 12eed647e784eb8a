"""Argument checks shared by the I/O layer's entry points: caller mistakes, not StreamErrors."""

from __future__ import annotations

__all__ = ["check_count"]


def check_count(name: str, value: object, *, minimum: int = 1) -> int:
    """`value` if it is an int of at least `minimum`; else the caller's mistake, named.

    Raises:
        TypeError: `value` is not an int (a bool is not a count either).
        ValueError: `value` is below `minimum`.

    >>> check_count("maxsize", 0)
    Traceback (most recent call last):
    ...
    ValueError: maxsize must be at least 1, got 0
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value!r}")
    return value
