"""Quickstart: stream a chat completion through rxstream, with no key and no network.

It starts rxstream's fake OpenAI-compatible server on 127.0.0.1, streams one
answer with `httpx.Client`, prints the text as it arrives, and prints the final
message once the stream has ended. Point `url` and `headers` at a real
provider (`https://api.openai.com/v1/chat/completions`, `Authorization:
Bearer ...`) and nothing else changes.

    python examples/quickstart.py
"""

from __future__ import annotations

import httpx

import rxstream as rs
from rxstream.testing.server import FakeLLMServer, Scenario


def show(delta: rs.Delta) -> None:
    """Print text as it arrives (reasoning, tool calls and usage arrive as other deltas)."""
    if isinstance(delta, rs.TextDelta):
        print(delta.text, end="", flush=True)


def main() -> None:
    answer = Scenario.text(
        "Reactive", " streams", " make", " LLM", " output", " composable.", delay=0.02
    )
    with FakeLLMServer(answer) as server, httpx.Client(timeout=10.0) as client:
        payload = {
            "model": "fake-model",
            "stream": True,
            "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": "Why rxstream?"}],
        }
        deltas = rs.from_request(client, "POST", server.url, json=payload).pipe(
            rs.sse_frames(),
            rs.decode_chunks(),
            rs.deltas(),
        )
        messages: list[rs.Message] = []
        # One HTTP request, seen by both observers: attach them, then leave the
        # block, which connects (a sync client: the stream has ended after it).
        with rs.multicast(deltas) as hub:
            hub.subscribe(show, lambda error: print(f"\nstream failed: {error}"))
            hub.observe().pipe(rs.accumulate_message()).subscribe(messages.append, lambda _: None)
        print()

    for message in messages:
        print(f"final message ({message.role}, finish_reason={message.finish_reason!r}):")
        print(f"  {message.content}")
        if message.usage is not None:
            print(
                f"  usage: {message.usage.prompt_tokens} prompt + "
                f"{message.usage.completion_tokens} completion tokens"
            )


if __name__ == "__main__":
    main()
