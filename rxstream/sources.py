"""PLACEHOLDER: being written; replace this whole file."""

from typing import Any


def from_request(*args: Any, **kwargs: Any) -> Any:
    raise NotImplementedError("from_request is not written yet")

def from_response(*args: Any, **kwargs: Any) -> Any:
    raise NotImplementedError("from_response is not written yet")

def from_lines(*args: Any, **kwargs: Any) -> Any:
    raise NotImplementedError("from_lines is not written yet")
