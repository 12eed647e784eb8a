"""The `rxstream` command (the `cli` extra, with rich): `demo`, `replay FILE`, `chat PROMPT`.

    $ pip install -e ".[cli]" && rxstream demo

`rxstream demo` streams a scripted answer (reasoning, text, two parallel tool
calls) from a local `FakeLLMServer`: no key, no network. When stdout is not a
terminal the output is plain text; Ctrl-C closes the connection, keeps what
arrived and exits with 130; a failure is one line on stderr (`--debug` for the
traceback).
"""

from ._app import main

__all__ = ["main"]
