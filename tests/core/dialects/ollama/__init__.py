"""Tests of `rxstream.core.dialects.ollama`."""
