"""Tests of `rxstream.core.dialects.bedrock`."""
