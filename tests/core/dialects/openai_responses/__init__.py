"""Tests of `rxstream.core.dialects.openai_responses`."""
