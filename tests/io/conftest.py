"""Fixtures the I/O tests share (defined in `tests/support`)."""

from tests.support.pools import pool

__all__ = ["pool"]
