"""PLACEHOLDER: being written; replace this whole file."""

from typing import Any


def decode_chunks(*args: Any, **kwargs: Any) -> Any:
    raise NotImplementedError("decode_chunks is not written yet")
