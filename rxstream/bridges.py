"""PLACEHOLDER: being written; replace this whole file."""

from typing import Any


def to_iterator(*args: Any, **kwargs: Any) -> Any:
    raise NotImplementedError("to_iterator is not written yet")

def to_async_iterator(*args: Any, **kwargs: Any) -> Any:
    raise NotImplementedError("to_async_iterator is not written yet")
