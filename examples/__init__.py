"""rxstream's examples: scripts (`python examples/quickstart.py`) and one app (`fastapi_chat`)."""
