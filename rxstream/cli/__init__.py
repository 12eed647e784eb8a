"""The `rxstream` command (the `cli` extra, with rich): `demo`, `replay FILE`, `chat PROMPT`.

    $ pip install -e ".[cli]" && rxstream demo

`rxstream demo` streams a scripted answer (reasoning, text, two parallel tool
calls) from a local `FakeLLMServer`: no key, no network. `--log FILE` writes
every frame with its time (`: t=SECONDS`), and `rxstream replay FILE` plays it
back at that pace (`--fast`: at once), its footer showing the recorded timings.

When stdout is not a terminal the output is plain text; Ctrl-C closes the
connection, keeps what arrived and exits with 130; a stream that ends in any
`StreamError` (and any other failure) is one line on stderr and exit status 1
(`--debug` for the traceback); a reader that leaves early (`| head -1`) ends
the command quietly with 141.
"""

from ._app import main

__all__ = ["main"]
