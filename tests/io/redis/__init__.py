"""Tests of `rxstream.io.redis`."""
