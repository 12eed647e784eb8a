"""PLACEHOLDER: being written; replace this whole file."""

from typing import Any


def accumulate_tool_calls(*args: Any, **kwargs: Any) -> Any:
    raise NotImplementedError("accumulate_tool_calls is not written yet")
