"""The `rxstream` command (the `cli` extra, with rich): `demo`, `replay FILE`, `chat PROMPT`.

    $ pip install -e ".[cli]" && rxstream demo

`rxstream demo` streams a scripted answer (reasoning, text, two parallel tool
calls) from a local `FakeLLMServer`: no key, no network; `--dialect NAME` serves
it in any dialect, at that API's real path. `--log FILE` writes the stream in
its own wire format with the time each item arrived (SSE with `: t=SECONDS`
comments; NDJSON and AWS event streams with a `FILE.timing` sidecar), and
`rxstream replay FILE` plays it back at that pace (`--fast`: at once), its
footer showing the recorded timings. `replay` tells SSE, NDJSON and AWS event
streams apart by their first bytes and the dialect by the first event
(`--dialect NAME` to say it). `rxstream chat --dialect NAME` asks OpenAI (chat
completions or Responses), Anthropic, Gemini, Cohere, Ollama or Bedrock (with
a Bedrock API key or a signing endpoint: rxstream does no SigV4), each with its
own path, auth header and key variable (`_apis`).

When stdout is not a terminal the output is plain text; Ctrl-C closes the
connection, keeps what arrived and exits with 130; a stream that ends in any
`StreamError` (and any other failure) is one line on stderr and exit status 1
(`--debug` for the traceback); a reader that leaves early (`| head -1`) ends
the command quietly with 141. No key is ever printed.
"""

from ._app import main

__all__ = ["main"]
