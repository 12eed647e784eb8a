"""Deprecated: the timing helpers moved to `rxstream.operators.timing`.

This path goes in the next release; each use of a name through it warns
(`DeprecationWarning`) and gives the same object from the new module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._deprecate import moved_names

if TYPE_CHECKING:
    from .timing import Duration, SerialQueue, duration, timer_scheduler

__all__ = ["Duration", "SerialQueue", "duration", "timer_scheduler"]

if not TYPE_CHECKING:
    __getattr__ = moved_names(__name__, dict.fromkeys(__all__, "rxstream.operators.timing"))
