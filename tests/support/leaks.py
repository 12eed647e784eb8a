"""Where a secret hides in an exception: every place a user, a logger or a debugger could read.

`places(error, secrets)` walks the exception object graph: `str`, `repr`,
`args`, every attribute (instance `__dict__` and `__slots__`, recursively
through dicts, lists, tuples, sets and arbitrary objects such as an httpx
request and its headers), `__cause__`, `__context__`, `__notes__`, and the
text of `traceback.format_exception(error)`. It returns the paths at which a
secret was found, so an assertion failure says where the key leaked.

Not walked: `__traceback__` (frames hold the caller's locals, the client and
its headers among them; that is the program's state, not the error's), and
modules, classes, functions and code, which hold nothing a server sent.
"""

from __future__ import annotations

import traceback
import types
from collections.abc import Iterable, Mapping
from typing import Any

_OPAQUE = (
    types.ModuleType,
    type,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.CodeType,
    types.FrameType,
    types.TracebackType,
)

#: How deep the walk goes (an httpx request's headers sit about five levels down).
MAX_DEPTH = 14


def places(error: BaseException, secrets: Iterable[str]) -> list[str]:
    """The paths in `error`'s object graph where any of `secrets` appears."""
    wanted = [s for s in secrets if s]
    found: list[str] = []
    text = "".join(traceback.format_exception(error))
    found += [f"format_exception(error) holds {s!r}" for s in wanted if s in text]
    _walk(error, "error", wanted, found, set(), 0)
    return found


def _hit(value: str | bytes, secrets: list[str]) -> list[str]:
    if isinstance(value, str):
        return [s for s in secrets if s in value]
    return [s for s in secrets if s.encode("utf-8", "replace") in value]


def _walk(
    obj: Any, path: str, secrets: list[str], found: list[str], seen: set[int], depth: int
) -> None:
    if obj is None or isinstance(obj, (bool, int, float, complex, *_OPAQUE)):
        return
    if isinstance(obj, str | bytes | bytearray):
        value = bytes(obj) if isinstance(obj, bytearray) else obj
        found += [f"{path} holds {s!r}" for s in _hit(value, secrets)]
        return
    if id(obj) in seen or depth > MAX_DEPTH:
        return
    seen.add(id(obj))
    try:
        shown = repr(obj)
    except Exception as exc:  # a repr that fails says nothing
        shown = f"<repr failed: {exc!r}>"
    found += [f"repr({path}) holds {s!r}" for s in _hit(shown, secrets)]
    if isinstance(obj, BaseException):
        found += [f"str({path}) holds {s!r}" for s in _hit(str(obj), secrets)]
        _walk(obj.args, f"{path}.args", secrets, found, seen, depth + 1)
        _walk(obj.__cause__, f"{path}.__cause__", secrets, found, seen, depth + 1)
        _walk(obj.__context__, f"{path}.__context__", secrets, found, seen, depth + 1)
        _walk(getattr(obj, "__notes__", None), f"{path}.__notes__", secrets, found, seen, depth + 1)
    if isinstance(obj, Mapping):
        for key, value in list(obj.items()):
            _walk(key, f"{path}[key {key!r}]", secrets, found, seen, depth + 1)
            _walk(value, f"{path}[{key!r}]", secrets, found, seen, depth + 1)
    elif isinstance(obj, list | tuple | set | frozenset):
        for i, item in enumerate(list(obj)):
            _walk(item, f"{path}[{i}]", secrets, found, seen, depth + 1)
    for name, value in _attributes(obj):
        _walk(value, f"{path}.{name}", secrets, found, seen, depth + 1)


def _attributes(obj: Any) -> list[tuple[str, Any]]:
    attributes: list[tuple[str, Any]] = []
    with_dict = getattr(obj, "__dict__", None)
    if isinstance(with_dict, dict):
        attributes += [(k, v) for k, v in with_dict.items() if k != "__traceback__"]
    for cls in type(obj).__mro__:
        slots = getattr(cls, "__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name in ("__dict__", "__weakref__"):
                continue
            if name.startswith("__") and not name.endswith("__"):
                name = f"_{cls.__name__.lstrip('_')}{name}"
            try:
                attributes.append((name, object.__getattribute__(obj, name)))
            except AttributeError:
                continue
    return attributes
