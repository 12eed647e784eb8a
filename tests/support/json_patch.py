"""A plain RFC 6902 applier of `add` and `replace`, to check the JSON patches the tests receive.

jsonpatch is not a dependency; this applier is written from the RFC and checks each operation's
preconditions (an `add` within a list's bounds, a `replace` of a key that is there).
"""

from __future__ import annotations

import copy
from typing import Any

from rxstream.core.objects import parse_pointer


def apply(document: Any, ops: tuple[dict[str, Any], ...]) -> Any:
    """A plain RFC 6902 applier of `add` and `replace` (jsonpatch is not installed here)."""
    for op in ops:
        assert op["op"] in ("add", "replace")
        tokens = parse_pointer(op["path"])
        value = copy.deepcopy(op["value"])
        if not tokens:
            document = value
            continue
        parent = document
        for token in tokens[:-1]:
            parent = parent[int(token) if isinstance(parent, list) else token]
        last = tokens[-1]
        if isinstance(parent, list):
            index = len(parent) if last == "-" else int(last)
            if op["op"] == "add":
                assert index <= len(parent)
                parent.insert(index, value)
            else:
                parent[index] = value
        else:
            assert op["op"] == "add" or last in parent
            parent[last] = value
    return document
