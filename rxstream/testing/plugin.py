"""The rxstream pytest plugin (entry point `pytest11`)."""
