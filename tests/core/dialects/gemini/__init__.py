"""Tests of `rxstream.core.dialects.gemini`."""
