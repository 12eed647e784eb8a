"""PLACEHOLDER: being written; replace this whole file."""

from typing import Any


def accumulate_message(*args: Any, **kwargs: Any) -> Any:
    raise NotImplementedError("accumulate_message is not written yet")
