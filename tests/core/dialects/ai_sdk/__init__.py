"""Tests of `rxstream.core.dialects.ai_sdk`."""
