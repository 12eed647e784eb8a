"""Typed decoding for the `fast` extra: each dialect's common events declared as msgspec types.

One module per dialect (named as the dialect's package under
`rxstream.core.dialects`), loaded through `rxstream._fast.typed(name)` only
when msgspec is installed and the fast paths are on. Each decodes the events
a dialect usually sends (text, reasoning and tool-argument deltas, usage,
finish) straight into msgspec types, which does the parsing and the shape
checks in C; anything its types do not know goes to the dialect decoder's
general path, so the items and errors are exactly the standard library's.

msgspec reads every number of a text into its type but for those in a field
declared `msgspec.Raw`, which it skips; a module that declares one decodes
with `decoder`, which makes that exact too (see there).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from functools import cache
from typing import Any

import msgspec

__all__ = ["decoder"]

#: The fewest digits `json.loads` refuses in an integer: `sys.set_int_max_str_digits`
#: takes no limit under 640 (but 0: no limit at all).
_FEWEST_REFUSED = 641


def decoder(kind: Any) -> Callable[[str | bytes], Any]:
    """msgspec's decoding straight into `kind`, refusing too what it would take and json would not.

    msgspec skips a field its types declare `msgspec.Raw` without making
    numbers of it (as it skips a field they do not declare, where they allow
    that), so it takes an integer of more digits than
    `json.loads` does (`sys.get_int_max_str_digits()`), which calls the event
    malformed. A text with such a run of digits anywhere is refused here
    (`msgspec.DecodeError`, as for any event the types do not know), so the
    general path, which has the last word, reads it. Only a long text can
    hold one: a short one costs a length check.
    """
    decode = msgspec.json.Decoder(kind).decode

    def read(data: str | bytes) -> Any:
        if len(data) >= _FEWEST_REFUSED and _refused_digits(data):
            raise msgspec.DecodeError("a run of more digits than json.loads takes in an integer")
        return decode(data)

    return read


def _refused_digits(data: str | bytes) -> bool:
    """Whether `data` has a run of more digits than `json.loads` takes in an integer."""
    limit = sys.get_int_max_str_digits()
    if not limit or len(data) <= limit:
        return False
    return _run_of(limit + 1, type(data) is not str)(data) is not None


@cache
def _run_of(digits: int, binary: bool) -> Callable[[Any], Any]:
    pattern = f"[0-9]{{{digits}}}"
    return re.compile(pattern.encode() if binary else pattern).search
