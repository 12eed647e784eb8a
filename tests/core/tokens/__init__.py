"""Tests of `rxstream.core.tokens`."""
