"""Tests of `rxstream.core.dialects.anthropic`."""
