"""PLACEHOLDER: being written; replace this whole file."""

from typing import Any


def sse_frames(*args: Any, **kwargs: Any) -> Any:
    raise NotImplementedError("sse_frames is not written yet")
