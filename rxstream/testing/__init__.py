"""Helpers for testing LLM pipelines: stream builders, marbles, a fake LLM server."""
