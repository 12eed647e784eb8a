"""Arguments as (JSON path, value) pairs, and back to JSON text while they stream.

Vertex AI streams function-call arguments as `partialArgs`: each sets the
value at a JSON path (`$.a.b[0]`, RFC 9535 normalized paths, names in
`['...']` when they are not plain), and string values for the same path
continue each other. `ArgumentsWriter` turns them into JSON text as they
come, so that the pieces concatenate to the compact JSON of the final
arguments; `path_values` is the inverse, the (path, value) pairs that build
an object, in order.

Input: paths (`parse_path`) and values. Output: JSON text pieces.
Invariant: after every `write`, the text so far is a prefix of
`json.dumps(args, separators=(",", ":"), ensure_ascii=False)` of the
arguments the paths describe (keys in arrival order), and `close()`
completes it; a path that would break this is `PathError`, with no state
touched.
"""

from __future__ import annotations

import json

from ...models import JSON, JSONObject
from ._shared import dumps

__all__ = ["ArgumentsWriter", "PathError", "Segments", "format_path", "parse_path", "path_values"]

#: A parsed JSON path: object member names and array indexes, outermost first.
Segments = list[str | int]

_NAME = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789")


class PathError(Exception):
    """A path that cannot extend the JSON text written so far."""


def parse_path(path: str) -> Segments | None:
    """A normalized JSON path as segments; None when it is not one.

    >>> parse_path("$.a['b c'][0]")
    ['a', 'b c', 0]
    """
    if not path.startswith("$"):
        return None
    out: Segments = []
    i, n = 1, len(path)
    while i < n:
        c = path[i]
        if c == ".":
            j = i + 1
            while j < n and path[j] not in ".[":
                j += 1
            name = path[i + 1 : j]
            if not name or name == "*":
                return None
            out.append(name)
            i = j
        elif c == "[" and i + 1 < n and path[i + 1] in "'\"":
            quote = path[i + 1]
            j = i + 2
            while j < n and path[j] != quote:
                j += 2 if path[j] == "\\" else 1
            if j + 1 >= n or path[j + 1] != "]":
                return None
            body = path[i + 2 : j]
            if quote == "'":
                body = body.replace("\\'", "'").replace('"', '\\"')
            try:
                out.append(json.loads(f'"{body}"'))
            except ValueError:
                return None
            i = j + 2
        elif c == "[":
            j = path.find("]", i)
            digits = path[i + 1 : j] if j > 0 else ""
            if not digits.isdigit() or not digits.isascii():
                return None
            out.append(int(digits))
            i = j + 1
        else:
            return None
    return out


def format_path(segments: Segments) -> str:
    """Segments as a normalized path: `.name` where the name is plain, else `["name"]`.

    >>> format_path(["a", "b c", 0])
    '$.a["b c"][0]'
    """
    out = ["$"]
    for segment in segments:
        if isinstance(segment, int):
            out.append(f"[{segment}]")
        elif segment and segment[0] not in "0123456789" and _NAME.issuperset(segment):
            out.append(f".{segment}")
        else:
            out.append(f"[{dumps(segment)}]")
    return "".join(out)


def path_values(args: JSONObject) -> list[tuple[str, JSON]]:
    """The (path, value) pairs that set `args`, in order; empty nested arrays and objects
    have no path to them and are left out.

    >>> path_values({"a": {"b": 1}, "c": [True, None]})
    [('$.a.b', 1), ('$.c[0]', True), ('$.c[1]', None)]
    """
    out: list[tuple[str, JSON]] = []

    def walk(segments: Segments, value: JSON) -> None:
        if type(value) is dict:
            for key, item in value.items():
                walk([*segments, key], item)
        elif type(value) is list:
            for i, item in enumerate(value):
                walk([*segments, i], item)
        else:
            out.append((format_path(segments), value))

    walk([], args)
    return out


class ArgumentsWriter:
    """Values set at JSON paths, written out as JSON text while they come (see the module).

    The writer keeps the containers open along the current path; for each
    value it writes the closing brackets, commas, keys and opening brackets
    that lead from the last value to the new one, then the value. A string is
    left open, since more of it may follow at the same path. Array indexes
    past the next one fill the gap with nulls (as a sparse array serialises).

    >>> w = ArgumentsWriter()
    >>> w.write(["a", 0], "x", True) + w.write(["a", 0], "y", True) + w.write(["b"], 2, False)
    '{"a":["xy"],"b":2'
    >>> w.close()
    '}'
    """

    __slots__ = ("_arrays", "_counts", "_keys", "_leaf", "_path", "_string_open")

    def __init__(self) -> None:
        # One entry per open container, the root object first.
        self._arrays: list[bool] = []
        self._counts: list[int] = []
        self._keys: list[set[str]] = []
        self._path: Segments = []  # the segments leading to the innermost open container
        self._leaf: Segments | None = None
        self._string_open = False

    def write(self, segments: Segments, value: JSON, is_string: bool) -> str:
        """The text that sets `value` at `segments` (a string continued: just the new piece).

        Raises:
            PathError: the path goes back over what was written, or through the
                wrong kind of container; nothing is written then.
        """
        if is_string and self._string_open and segments == self._leaf:
            return dumps(value)[1:-1]
        common = self._check(segments)
        out: list[str] = []
        if self._string_open:
            out.append('"')
            self._string_open = False
        if not self._arrays:
            out.append("{")
            self._push(False)
        *inner, leaf = segments
        path = self._path
        while len(path) > common:
            path.pop()
            out.append("]" if self._pop() else "}")
        for depth in range(common, len(inner)):
            out.append(self._enter(inner[depth]))
            below = inner[depth + 1] if depth + 1 < len(inner) else leaf
            is_array = type(below) is int
            out.append("[" if is_array else "{")
            self._push(is_array)
            path.append(inner[depth])
        out.append(self._enter(leaf))
        if is_string:
            out.append(dumps(value)[:-1])
            self._string_open = True
        else:
            out.append(dumps(value))
        self._leaf = segments
        return "".join(out)

    def close(self) -> str:
        """The text that closes everything still open (`{}` when nothing was written)."""
        if not self._arrays:
            return "{}"
        out = ['"'] if self._string_open else []
        self._string_open = False
        while self._arrays:
            out.append("]" if self._pop() else "}")
        self._path.clear()
        return "".join(out)

    def _check(self, segments: Segments) -> int:
        """How many open containers `segments` shares; `PathError` if it cannot extend the text."""
        if not segments:
            raise PathError("a value for the whole arguments ($); they must be an object")
        *inner, leaf = segments
        common = 0
        for a, b in zip(self._path, inner, strict=False):
            if a != b or type(a) is not type(b):
                break
            common += 1
        # The first new member goes into the open container at depth `common`;
        # everything below it is new, each container of the kind its segment needs.
        segment = inner[common] if common < len(inner) else leaf
        if self._arrays:
            is_array, count, keys = self._arrays[common], self._counts[common], self._keys[common]
        else:
            is_array, count, keys = False, 0, set()
        if is_array:
            if type(segment) is not int:
                raise PathError(f"the name {segment!r} indexes an array")
            if segment < count:
                raise PathError(f"array index {segment} goes back over values already written")
        elif type(segment) is int:
            raise PathError(f"the index [{segment}] indexes an object")
        elif segment in keys:
            raise PathError(f"the key {segment!r} was written before")
        return common

    def _push(self, is_array: bool) -> None:
        self._arrays.append(is_array)
        self._counts.append(0)
        self._keys.append(set())

    def _pop(self) -> bool:
        self._counts.pop()
        self._keys.pop()
        return self._arrays.pop()

    def _enter(self, segment: str | int) -> str:
        """The separator and key (or null fillers) before a new member of the inner container."""
        count = self._counts[-1]
        if isinstance(segment, int):
            text = "".join(("," if i else "") + "null" for i in range(count, segment))
            if count or segment:
                text += ","
            self._counts[-1] = segment + 1
            return text
        self._keys[-1].add(segment)
        self._counts[-1] = count + 1
        return ("," if count else "") + dumps(segment) + ":"
