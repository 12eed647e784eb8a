"""Tests of `rxstream.core.dialects.cohere`."""
