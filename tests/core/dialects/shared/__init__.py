"""Tests of `rxstream.core.dialects._shared`."""
