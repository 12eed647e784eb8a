"""A decoded turn goes back as the official SDK's own accumulated turn does.

For each recording of a dialect whose SDK assembles the turn itself (the anthropic
SDK's `get_final_message()`, the openai SDK's `get_final_response()`), the fake server
serves the recording on loopback; the SDK reads it and sends its turn back the way its
users do (`{"role": "assistant", "content": final.content}`, `input += response.output`),
and `rs.chat` reads the same answer from the same server into a `Message`, which goes back
with `rs.request`.
The assistant turns of the two requests must be equal: signed thinking, redacted
thinking, server tools, text and calls, in their order.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import rxstream as rs
from rxstream.models import Message
from rxstream.testing.server import FakeLLMServer, Raw, Scenario
from tests.support.request_recordings import DATA
from tests.support.sdk_oracle import KEY, sdk_request

ASK = "Go on."

# Not here: tool-no-args-interleaved-pings.sse, which the anthropic SDK cannot assemble
# (get_final_message fails on it).
ANTHROPIC = [
    "anthropic/redacted-thinking.sse",
    "anthropic/text-minimal-padded.sse",
    "anthropic/thinking-signature-padded.sse",
    "anthropic/tool-use-input-json.sse",
    "anthropic/web-search-server-tool-citations.sse",
]


def _sse(*events: dict[str, Any]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def _message_start(id: str, model: str) -> dict[str, Any]:
    """A hand-written stream's `message_start`: an empty assistant message."""
    message: dict[str, Any] = {
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 9, "output_tokens": 1},
    }
    return {"type": "message_start", "message": message}


def _message_end(stop_reason: str, output_tokens: int) -> list[dict[str, Any]]:
    """A hand-written stream's `message_delta` (its stop reason and usage), then `message_stop`."""
    delta = {"stop_reason": stop_reason, "stop_sequence": None}
    return [
        {"type": "message_delta", "delta": delta, "usage": {"output_tokens": output_tokens}},
        {"type": "message_stop"},
    ]


def _cite(url: str, text: str) -> dict[str, Any]:
    citation = {
        "type": "web_search_result_location",
        "cited_text": text,
        "url": url,
        "title": f"Page {url[-1]}",
        "encrypted_index": f"Eo{url[-1]}==",
    }
    return {"type": "citations_delta", "citation": citation}


def _text(
    index: int, *pieces: str, cited: tuple[dict[str, Any], ...] = (), listed: bool = False
) -> list[Any]:
    """A text block in the API's order: start, citations (when any), text, stop.

    `listed`: the start has `"citations": []` even with no citation to follow.
    """
    block: dict[str, Any] = {"type": "text", "text": ""}
    if cited or listed:
        block["citations"] = []
    events = [{"type": "content_block_start", "index": index, "content_block": block}]
    events += [{"type": "content_block_delta", "index": index, "delta": c} for c in cited[:1]]
    events += [
        {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": p}}
        for p in pieces
    ]
    events += [{"type": "content_block_delta", "index": index, "delta": c} for c in cited[1:]]
    return [*events, {"type": "content_block_stop", "index": index}]


# Written by hand in the API's wire shape: text blocks with and without `citations`, next
# to each other (a block's citations_delta before and after its text).
HAND_CITED = "hand-written: text blocks with citations"
CITED = _sse(
    _message_start("msg_1", "claude-sonnet-4-5"),
    *_text(0, "From the ", "search: "),
    *_text(1, "the sky ", "is blue", cited=(_cite("https://a/1", "Sky"), _cite("https://b/2", ""))),
    *_text(2, ", and "),
    *_text(3, "grass is green", cited=(_cite("https://c/3", "Grass is green."),)),
    *_text(4, ". Also, "),
    # A block that may cite but whose list stays empty, between two plain ones: kept apart.
    *_text(5, "rain is ", "wet", listed=True),
    *_text(6, "!"),
    *_message_end("end_turn", 30),
)
ANTHROPIC.append(HAND_CITED)

# Written by hand in the API's wire shape: text blocks side by side, none with `citations`
# (the SDK's final message keeps each), around a tool call.
HAND_ADJACENT = "hand-written: adjacent text blocks"
ADJACENT = _sse(
    _message_start("msg_2", "claude-sonnet-4-5"),
    *_text(0, "Let me ", "check. "),
    *_text(1, "One moment."),
    {
        "type": "content_block_start",
        "index": 2,
        "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}},
    },
    {
        "type": "content_block_delta",
        "index": 2,
        "delta": {"type": "input_json_delta", "partial_json": '{"q": 1}'},
    },
    {"type": "content_block_stop", "index": 2},
    *_text(3, "Then "),
    *_text(4, "more."),
    *_message_end("tool_use", 20),
)
ANTHROPIC.append(HAND_ADJACENT)

# Compaction, in the shape the anthropic SDK's own fixture streams it: the written
# recording, and a compaction that failed (no summary: `content` stays null).
HAND_FAILED_COMPACTION = "hand-written: a compaction that failed"
FAILED_COMPACTION = _sse(
    _message_start("msg_3", "claude-sonnet-4-6"),
    {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "compaction", "content": None, "encrypted_content": None},
    },
    {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "compaction_delta", "content": None, "encrypted_content": "EqNone=="},
    },
    {"type": "content_block_stop", "index": 0},
    *_text(1, "Go on with what?"),
    *_message_end("end_turn", 6),
)
COMPACTIONS = ["anthropic/compaction-written.sse", HAND_FAILED_COMPACTION]

RESPONSES = [
    "openai-responses/function-call-args.sse",
    "openai-responses/reasoning-encrypted-content-function-call.sse",
    "openai-responses/reasoning-summary-and-text.sse",
    "openai-responses/text.sse",
]


def _response(status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1765000000,
        "status": status,
        "model": "gpt-5",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": None
        if status != "completed"
        else {
            "input_tokens": 9,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 8,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 17,
        },
    }


def _message_item(oi: int, *parts: str) -> list[dict[str, Any]]:
    """A message item's events in the API's order, with more than one part when given."""
    item_id = f"msg_{oi}"
    whole = [{"type": "output_text", "text": p, "annotations": []} for p in parts]
    item = {"type": "message", "id": item_id, "status": "in_progress", "role": "assistant"}
    events: list[dict[str, Any]] = [
        {"type": "response.output_item.added", "output_index": oi, "item": {**item, "content": []}}
    ]
    for ci, part in enumerate(whole):
        at = {"item_id": item_id, "output_index": oi, "content_index": ci}
        events += [
            {"type": "response.content_part.added", **at, "part": {**part, "text": ""}},
            {"type": "response.output_text.delta", **at, "delta": part["text"]},
            {"type": "response.output_text.done", **at, "text": part["text"]},
            {"type": "response.content_part.done", **at, "part": part},
        ]
    done = {**item, "status": "completed", "content": whole}
    return [*events, {"type": "response.output_item.done", "output_index": oi, "item": done}]


# Written by hand in the API's wire shape: two message items one after the other (the
# first with two output_text parts); the SDK's final output keeps both items.
HAND_TWO_MESSAGES = "hand-written: two message items"
TWO_MESSAGES = _sse(
    {"type": "response.created", "response": _response("in_progress", [])},
    *(first := _message_item(0, "Paris is the capital. ", "It is in France.")),
    *(second := _message_item(1, "Anything else?")),
    {
        "type": "response.completed",
        "response": _response("completed", [first[-1]["item"], second[-1]["item"]]),
    },
)
RESPONSES.append(HAND_TWO_MESSAGES)


def _chat(server: FakeLLMServer, dialect: str, base_url: str) -> Message:
    """The answer the server gives, read by `rs.chat` (the server repeats its last scenario)."""
    out: list[Message] = []
    with httpx.Client() as client:
        rs.chat(
            client,
            dialect,
            model="m",
            messages=[{"role": "user", "content": ASK}],
            api_key=KEY,
            base_url=base_url,
        ).pipe(rs.accumulate_message()).subscribe(out.append)
    (m,) = out
    assert len(server.requests) == 2
    return m


def _serve(path: str) -> FakeLLMServer:
    hand = {
        HAND_CITED: CITED,
        HAND_ADJACENT: ADJACENT,
        HAND_FAILED_COMPACTION: FAILED_COMPACTION,
        HAND_TWO_MESSAGES: TWO_MESSAGES,
    }
    body = hand[path] if path in hand else (DATA / path).read_bytes()
    pieces = [body[i : i + 4096] for i in range(0, len(body), 4096)]
    return FakeLLMServer(Scenario(steps=tuple(Raw(piece) for piece in pieces)))


def _anthropic_turns(path: str, *, beta: bool = False) -> tuple[Any, Any]:
    """The assistant turn the anthropic SDK sends back for the served answer, and rxstream's.

    `beta`: the SDK's beta client reads and sends the answer (compaction blocks are the
    context management beta's; the released client's types do not have them).
    """
    anthropic = pytest.importorskip("anthropic")
    with _serve(path) as server:
        client = anthropic.Anthropic(
            api_key=KEY, base_url=f"http://127.0.0.1:{server.port}", max_retries=0
        )
        messages = client.beta.messages if beta else client.messages
        with messages.stream(
            model="claude-sonnet-4-5",
            max_tokens=1024,
            messages=[{"role": "user", "content": ASK}],
        ) as stream:
            final = stream.get_final_message()
        m = _chat(server, "anthropic", f"http://127.0.0.1:{server.port}")

    def send(root: str) -> Any:
        again = anthropic.Anthropic(api_key=KEY, base_url=root, max_retries=0)
        return (again.beta.messages if beta else again.messages).create(
            model="claude-sonnet-4-5",
            max_tokens=1024,
            messages=[
                {"role": "user", "content": ASK},
                {"role": "assistant", "content": final.content},
            ],
            stream=True,
        )

    theirs = sdk_request(send)
    ours = rs.request(
        "anthropic",
        model="claude-sonnet-4-5",
        max_tokens=1024,
        messages=[{"role": "user", "content": ASK}, m],
        api_key=KEY,
        base_url="http://127.0.0.1",
    )
    return json.loads(ours.content)["messages"][1], theirs.json["messages"][1]


@pytest.mark.parametrize("path", ANTHROPIC)
def test_anthropic_turn_goes_back_as_the_sdk_final_message(path: str) -> None:
    ours, theirs = _anthropic_turns(path)
    assert ours == theirs


@pytest.mark.parametrize("path", COMPACTIONS)
def test_anthropic_compaction_goes_back_as_the_beta_sdk_final_message(path: str) -> None:
    ours, theirs = _anthropic_turns(path, beta=True)
    assert ours == theirs
    assert ours["content"][0]["type"] == "compaction"


@pytest.mark.parametrize("path", RESPONSES)
def test_responses_turn_goes_back_as_the_sdk_final_output(path: str) -> None:
    openai = pytest.importorskip("openai")
    with _serve(path) as server:
        client = openai.OpenAI(
            api_key=KEY, base_url=f"http://127.0.0.1:{server.port}/v1", max_retries=0
        )
        with client.responses.stream(model="gpt-5", input=ASK) as stream:
            final = stream.get_final_response()
        m = _chat(server, "openai-responses", f"http://127.0.0.1:{server.port}/v1")

    def send(root: str) -> Any:
        again = openai.OpenAI(api_key=KEY, base_url=f"{root}/v1", max_retries=0)
        return again.responses.create(
            model="gpt-5",
            input=[{"role": "user", "content": ASK}, *final.output],
            stream=True,
        )

    theirs = sdk_request(send)
    ours = rs.request(
        "openai-responses",
        model="gpt-5",
        messages=[{"role": "user", "content": ASK}, m],
        api_key=KEY,
        base_url="http://127.0.0.1/v1",
    )
    assert json.loads(ours.content)["input"][1:] == theirs.json["input"][1:]


# -- Cohere: the SDK's user keeps the citations of `citation-start` on the assistant turn --------

COHERE_EVENTS: list[dict[str, Any]] = [
    {
        "id": "c-1",
        "type": "message-start",
        "delta": {
            "message": {
                "role": "assistant",
                "content": [],
                "tool_plan": "",
                "tool_calls": [],
                "citations": [],
            }
        },
    },
    {
        "type": "content-start",
        "index": 0,
        "delta": {"message": {"content": {"type": "text", "text": ""}}},
    },
    *(
        {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": t}}}}
        for t in ("The tallest ", "penguin is ", "the emperor penguin.")
    ),
    {"type": "content-end", "index": 0},
    {
        "type": "citation-start",
        "index": 0,
        "delta": {
            "message": {
                "citations": {
                    "start": 23,
                    "end": 43,
                    "text": "the emperor penguin.",
                    "sources": [
                        {
                            "type": "document",
                            "id": "doc:0",
                            "document": {
                                "id": "doc:0",
                                "title": "Tall penguins",
                                "snippet": "x",
                            },
                        },
                        {
                            "type": "tool",
                            "id": "search:0",
                            "tool_output": {"url": "https://penguins.example/emperor"},
                        },
                    ],
                    "type": "TEXT_CONTENT",
                }
            }
        },
    },
    {"type": "citation-end", "index": 0},
    {
        "type": "citation-start",
        "index": 1,
        "delta": {
            "message": {
                "citations": {
                    "start": 4,
                    "end": 19,
                    "text": "tallest penguin",
                    "sources": [],
                    "type": "TEXT_CONTENT",
                }
            }
        },
    },
    {"type": "citation-end", "index": 1},
    {
        "type": "message-end",
        "delta": {
            "finish_reason": "COMPLETE",
            "usage": {"tokens": {"input_tokens": 30, "output_tokens": 9}},
        },
    },
]
COHERE_CITED = b"".join(
    f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in COHERE_EVENTS
)


def test_cohere_turn_goes_back_with_its_citations_as_the_sdk_sends_them() -> None:
    cohere = pytest.importorskip("cohere")
    with FakeLLMServer(Scenario(steps=(Raw(COHERE_CITED),))) as server:
        root = f"http://127.0.0.1:{server.port}"
        text, citations = "", []
        with httpx.Client() as http:
            client = cohere.ClientV2(api_key=KEY, base_url=root, httpx_client=http)
            for event in client.chat_stream(model="command-a-03-2025", messages=[_ask()]):
                if event.type == "content-delta":
                    text += event.delta.message.content.text
                elif event.type == "citation-start":
                    citations.append(event.delta.message.citations)
        turn = cohere.AssistantChatMessageV2(content=text, citations=citations)
        m = _chat(server, "cohere", root)
    assert len(m.citations) == 3  # one per source, and one for the citation without any

    def send(root: str) -> Any:
        again = cohere.ClientV2(api_key=KEY, base_url=root)
        return again.chat_stream(model="command-a-03-2025", messages=[_ask(), turn])

    theirs = sdk_request(send)
    ours = rs.request(
        "cohere",
        model="command-a-03-2025",
        messages=[_ask(), m],
        api_key=KEY,
        base_url="http://127.0.0.1",
    )
    assert json.loads(ours.content)["messages"][1] == theirs.json["messages"][1]
    assert len(theirs.json["messages"][1]["citations"]) == 2


def _ask() -> dict[str, Any]:
    return {"role": "user", "content": ASK}
