"""Tests of `rxstream.core.wire`."""
