"""The JSON view: one JSON object per delta and line (`replay --json`), for scripts and diffs."""

from __future__ import annotations

import json
from typing import Any

from ..core import wire as codec
from ..models import Delta
from ._view_base import View

__all__ = ["JSONView", "delta_json"]


def delta_json(delta: Delta) -> dict[str, Any]:
    """A delta as a JSON object: `type` first, then its fields (rxstream's encoding,
    `rxstream.core.wire`, so `wire.decode` gives the delta back, `raw` included).

    >>> from rxstream.models import TextDelta
    >>> delta_json(TextDelta("Hi"))
    {'type': 'text', 'text': 'Hi', 'choice': 0}
    """
    return codec.encode(delta)


class JSONView(View):
    """One JSON object per delta and line (`replay --json`), for scripts and diffs."""

    def show(self, delta: Delta) -> None:
        self.out.write(json.dumps(delta_json(delta), ensure_ascii=False) + "\n")
        self.out.flush()
