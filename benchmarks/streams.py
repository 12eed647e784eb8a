"""Deterministic OpenAI-format chat streams for the benchmarks.

Every generator returns a `Stream`: the body cut into fixed-size reads (as a
socket would deliver it) and the truth it must decode to, so each contender's
result can be checked on every run.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

# One text, split: easier to read than a list of 80 quoted words.
WORDS = str.split(
    "the of and to in is you that it he was for on are as with his they I at be this have from "
    "or one had by word but not what all were we when your can said there use an each which she "
    "do how their if will up other about out many then them these so some her would make like "
    "stream token chunk reactive observable parser delta message tool reasoning café naïve 東京 🙂"
)


@dataclass(frozen=True)
class Stream:
    """A recorded-like stream body and what it means."""

    name: str
    pieces: list[bytes]
    chunks: int
    content: str = ""
    reasoning: str = ""
    tool_calls: list[dict[str, str]] = field(default_factory=list)
    usage: dict[str, int] | None = None

    @property
    def size(self) -> int:
        return sum(len(p) for p in self.pieces)


def _cut(body: bytes, read_size: int) -> list[bytes]:
    return [body[i : i + read_size] for i in range(0, len(body), read_size)]


def _envelope(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    # Shaped like a real gpt-4o chunk (~300 bytes with the usual fields).
    return {
        "id": "chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz012",
        "object": "chat.completion.chunk",
        "created": 1727346168,
        "model": "gpt-4o-2024-08-06",
        "system_fingerprint": "fp_5050236cbd",
        "service_tier": "default",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        "obfuscation": "x7Qp",
    }


def _body(chunks: list[dict[str, Any]]) -> bytes:
    parts = [f"data: {json.dumps(c, separators=(',', ':'))}\n\n" for c in chunks]
    parts.append("data: [DONE]\n\n")
    return "".join(parts).encode()


def _usage(completion: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz012",
        "object": "chat.completion.chunk",
        "created": 1727346168,
        "model": "gpt-4o-2024-08-06",
        "choices": [],
        "usage": {
            "prompt_tokens": 17,
            "completion_tokens": completion,
            "total_tokens": 17 + completion,
        },
    }


def _tokens(rng: random.Random, n: int) -> list[str]:
    return [(" " if i else "") + rng.choice(WORDS) for i in range(n)]


def text_stream(n: int = 20_000, read_size: int = 4096, seed: int = 1) -> Stream:
    """`n` one-token content chunks, a finish chunk, a usage chunk with empty choices."""
    rng = random.Random(seed)
    tokens = _tokens(rng, n)
    chunks = [_envelope({"role": "assistant", "content": "", "refusal": None})]
    chunks += [_envelope({"content": t}) for t in tokens]
    chunks.append(_envelope({}, "stop"))
    chunks.append(_usage(n))
    usage = chunks[-1]["usage"]
    return Stream(
        "text", _cut(_body(chunks), read_size), len(chunks), content="".join(tokens), usage=usage
    )


def reasoning_stream(n: int = 10_000, read_size: int = 4096, seed: int = 2) -> Stream:
    """`n` `reasoning_content` chunks, then `n` `content` chunks (DeepSeek style)."""
    rng = random.Random(seed)
    thoughts, answer = _tokens(rng, n), _tokens(rng, n)
    chunks = [_envelope({"role": "assistant", "content": None, "reasoning_content": ""})]
    chunks += [_envelope({"content": None, "reasoning_content": t}) for t in thoughts]
    chunks += [_envelope({"content": t, "reasoning_content": None}) for t in answer]
    chunks.append(_envelope({}, "stop"))
    chunks.append(_usage(2 * n))
    return Stream(
        "reasoning",
        _cut(_body(chunks), read_size),
        len(chunks),
        content="".join(answer),
        reasoning="".join(thoughts),
        usage=chunks[-1]["usage"],
    )


def tools_stream(
    fragments: int = 5_000, calls: int = 4, read_size: int = 4096, seed: int = 3
) -> Stream:
    """`calls` parallel tool calls whose arguments arrive in `fragments` fragments in all."""
    rng = random.Random(seed)
    per_call = fragments // calls
    chunks = [_envelope({"role": "assistant", "content": None})]
    truth = []
    for index in range(calls):
        values = _tokens(rng, per_call - 3)
        arguments = json.dumps({"query": "".join(values), "limit": index + 1})
        # Cut the JSON text into per_call pieces of random sizes.
        cuts = sorted(rng.sample(range(1, len(arguments)), per_call - 1))
        pieces = [arguments[a:b] for a, b in zip([0, *cuts], [*cuts, len(arguments)], strict=True)]
        call_id = f"call_{index:02d}_{rng.randrange(16**8):08x}"
        name = f"search_{index}"
        chunks.append(
            _envelope(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        chunks += [
            _envelope({"tool_calls": [{"index": index, "function": {"arguments": p}}]})
            for p in pieces
        ]
        truth.append({"id": call_id, "name": name, "arguments": arguments})
    chunks.append(_envelope({}, "tool_calls"))
    chunks.append(_usage(fragments))
    return Stream(
        "tools",
        _cut(_body(chunks), read_size),
        len(chunks),
        tool_calls=truth,
        usage=chunks[-1]["usage"],
    )


SCENARIOS = {"text": text_stream, "tools": tools_stream, "reasoning": reasoning_stream}
