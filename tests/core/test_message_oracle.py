"""Our MessageAccumulator against the openai package's own stream accumulator.

Hypothesis generates OpenAI-shaped chat streams: random text and
`reasoning_content` cut at random places, refusals, one to five parallel tool
calls per choice with their arguments randomly fragmented and the fragments
of different calls interleaved, `n` = 1..3 choices interleaved, and usage.
Each stream is fed to `MessageAccumulator` and to
`openai.lib.streaming.chat.ChatCompletionStreamState`, and the final content,
reasoning, refusal, tool calls (id, name, arguments), finish reason and usage
must agree, and agree with what the generator put in.

Where the two differ, the tests below the property say which one is wrong:

- openai concatenates every string field of a fragment, so a provider that
  repeats `id`/`name` on every fragment (Groq, Qwen, vLLM) gets doubled ids
  and names from openai; ours keeps the first. openai is wrong for those
  providers (it is written for OpenAI's own wire format, which sends them once).
- openai sets the snapshot's usage from every chunk, so OpenAI's own trailing
  `moderation` chunk (`usage: null`, after the usage chunk) wipes it; ours
  keeps the last usage that arrived. openai is wrong there.
- openai places choices and tool calls by list position, so it needs them to
  first appear in index order; OpenAI sends them so, and the generator keeps
  that order (ours does not depend on it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk

from rxstream.core.message import MessageAccumulator
from rxstream.models import ChatChunk, Message, Usage
from rxstream.operators._chunk_input import chunks_or_deltas

BASE = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}


def wire(choice: int, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {**BASE, "choices": [{"index": choice, "delta": delta, "finish_reason": finish}]}


def pieces(draw: st.DrawFn, text: str) -> list[str]:
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=6)))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True) if a < b]


def interleave(draw: st.DrawFn, queues: list[list[Any]]) -> list[Any]:
    """Merge queues at random, keeping each queue's order, and starting them in queue order."""
    out: list[Any] = []
    started = 0
    while any(queues):
        live = [i for i, q in enumerate(queues) if q and (i < started or i == started)]
        if not live:  # the next queue to start is empty: skip it
            started += 1
            continue
        i = draw(st.sampled_from(live))
        started = max(started, i + 1)
        out.append(queues[i].pop(0))
    return out


text_st = st.text(st.characters(exclude_categories=["Cs"]), max_size=30)
json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


@st.composite
def streams(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Usage | None]:
    """(chunks, truth per choice, usage)."""
    n = draw(st.integers(1, 3))
    truths: list[dict[str, Any]] = []
    per_choice: list[list[dict[str, Any]]] = []
    for c in range(n):
        reasoning, content = draw(text_st), draw(text_st)
        refusal = draw(st.just("") | text_st)
        calls = []
        for i in range(draw(st.integers(0, 5))):
            arguments = json.dumps(
                draw(st.dictionaries(st.text(max_size=6), json_value, max_size=3))
            )
            calls.append(
                {
                    "id": f"call_{c}_{i}",
                    "name": draw(st.sampled_from(["get_weather", "f", "lookup"])),
                    "arguments": arguments,
                }
            )
        finish = (
            "tool_calls" if calls else draw(st.sampled_from(["stop", "length", "content_filter"]))
        )
        truths.append(
            {
                "content": content,
                "reasoning": reasoning,
                "refusal": refusal,
                "calls": calls,
                "finish": finish,
            }
        )

        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
        deltas += (
            [{"reasoning_content": p, "content": None} for p in pieces(draw, reasoning)]
            if reasoning
            else []
        )
        deltas += [{"content": p} for p in pieces(draw, content)] if content else []
        deltas += [{"refusal": p} for p in pieces(draw, refusal)] if refusal else []
        fragments = []
        for i, call in enumerate(calls):
            parts = pieces(draw, call["arguments"])
            head = {
                "index": i,
                "id": call["id"],
                "type": "function",
                "function": {"name": call["name"], "arguments": ""},
            }
            fragments.append([head] + [{"index": i, "function": {"arguments": p}} for p in parts])
        deltas += [{"tool_calls": [f]} for f in interleave(draw, fragments)]
        per_choice.append([wire(c, d) for d in deltas] + [wire(c, {}, finish)])

    chunks = interleave(draw, per_choice)
    usage = None
    if draw(st.booleans()):
        prompt, completion = draw(st.integers(0, 10**6)), draw(st.integers(0, 10**6))
        reasoning_tokens, cached = draw(st.integers(0, completion)), draw(st.integers(0, prompt))
        usage = Usage(prompt, completion, prompt + completion, reasoning_tokens, cached)
        chunks.append(
            {
                **BASE,
                "choices": [],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                    "prompt_tokens_details": {"cached_tokens": cached},
                    "completion_tokens_details": {"reasoning_tokens": reasoning_tokens},
                },
            }
        )
    return chunks, truths, usage


def ours(chunks: list[dict[str, Any]]) -> list[Message]:
    # The machines `rs.accumulate_message()` runs over chunks: a delta decoder first.
    acc = chunks_or_deltas(MessageAccumulator, "rs.accumulate_message()", reads_chunks=True)()
    for raw in chunks:
        acc.feed(ChatChunk(json.loads(json.dumps(raw))))
    return acc.close()


def theirs(chunks: list[dict[str, Any]]) -> Any:
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
    for raw in chunks:
        state.handle_chunk(ChatCompletionChunk.model_validate(raw))
    return state.current_completion_snapshot


def summary_of_theirs(snapshot: Any) -> list[dict[str, Any]]:
    out = []
    for choice in snapshot.choices:
        m = choice.message
        out.append(
            {
                "choice": choice.index,
                "content": m.content or "",
                "reasoning": (m.model_extra or {}).get("reasoning_content") or "",
                "refusal": m.refusal or "",
                "calls": [
                    (t.id, t.function.name, t.function.arguments) for t in m.tool_calls or []
                ],
                "finish": choice.finish_reason,
            }
        )
    return out


def summary_of_ours(messages: list[Message]) -> list[dict[str, Any]]:
    return [
        {
            "choice": m.choice,
            "content": m.content,
            "reasoning": m.reasoning,
            "refusal": m.refusal,
            "calls": [(t.id, t.name, t.arguments) for t in m.tool_calls],
            "finish": m.finish_reason,
        }
        for m in messages
    ]


def usage_of_theirs(snapshot: Any) -> Usage | None:
    u = snapshot.usage
    if u is None:
        return None
    return Usage(
        u.prompt_tokens,
        u.completion_tokens,
        u.total_tokens,
        u.completion_tokens_details.reasoning_tokens,
        u.prompt_tokens_details.cached_tokens,
    )


@settings(max_examples=100, deadline=None)
@given(streams())
def test_final_messages_agree_with_the_openai_accumulator(
    case: tuple[list[dict[str, Any]], list[dict[str, Any]], Usage | None],
) -> None:
    chunks, truths, usage = case
    messages = ours(chunks)
    snapshot = theirs(chunks)
    assert summary_of_ours(messages) == summary_of_theirs(snapshot)
    assert all(m.usage == usage for m in messages)
    assert usage_of_theirs(snapshot) == usage
    # Both agree; and both agree with what was generated.
    for message, truth in zip(messages, truths, strict=True):
        assert (message.content, message.reasoning, message.refusal, message.finish_reason) == (
            truth["content"],
            truth["reasoning"],
            truth["refusal"],
            truth["finish"],
        )
        assert [(t.id, t.name, t.parse_arguments()) for t in message.tool_calls] == [
            (c["id"], c["name"], json.loads(c["arguments"])) for c in truth["calls"]
        ]


def test_repeated_id_and_name_openai_doubles_them_ours_does_not() -> None:
    fragment = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f"}}
    chunks = [
        wire(0, {"role": "assistant", "content": None}),
        wire(0, {"tool_calls": [{**fragment, "function": {"name": "f", "arguments": '{"a":'}}]}),
        wire(0, {"tool_calls": [{**fragment, "function": {"name": "f", "arguments": "1}"}}]}),
        wire(0, {}, "tool_calls"),
    ]
    [message] = ours(chunks)
    assert [(t.id, t.name, t.arguments) for t in message.tool_calls] == [("call_1", "f", '{"a":1}')]
    # openai is wrong here: it concatenates the repeated id and name.
    [call] = theirs(chunks).choices[0].message.tool_calls
    assert (call.id, call.function.name, call.function.arguments) == (
        "call_1call_1",
        "ff",
        '{"a":1}',
    )


def test_moderation_chunk_after_usage_openai_loses_the_usage_ours_keeps_it() -> None:
    # The real OpenAI recording: a usage chunk, then a choices: [] chunk with moderation
    # and usage: null, then [DONE].
    recording = Path(__file__).parent.parent / "data/openai/chat-moderation-after-usage.sse"
    chunks = [
        json.loads(line[len("data: ") :])
        for line in recording.read_text(encoding="utf-8").splitlines()
        if line.startswith("data: {")
    ]
    assert chunks[-1]["usage"] is None
    assert "moderation" in chunks[-1]
    [message] = ours(chunks)
    assert message.usage == Usage(13, 11, 24, reasoning_tokens=0, cached_tokens=0)
    # openai is wrong here: the trailing moderation chunk's usage: null overwrites the usage.
    assert theirs(chunks).usage is None
