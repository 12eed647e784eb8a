"""Fixtures the request oracle's tests share (defined in `tests/support`)."""

from tests.support.sdk_oracle import aws_env

__all__ = ["aws_env"]
