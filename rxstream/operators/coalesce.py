"""PLACEHOLDER: being written; replace this whole file."""

from typing import Any


def coalesce(*args: Any, **kwargs: Any) -> Any:
    raise NotImplementedError("coalesce is not written yet")
