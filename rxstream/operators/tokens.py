"""PLACEHOLDER: being written; replace this whole file."""

from typing import Any


def count_tokens(*args: Any, **kwargs: Any) -> Any:
    raise NotImplementedError("count_tokens is not written yet")
