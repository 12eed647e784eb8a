"""What of a decoded turn goes back, where a dialect keeps a block as it came (table cases)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import rxstream as rs
from rxstream.models import (
    JSONObject,
    Message,
    ServerToolCall,
    ServerToolResult,
    TextBlock,
    ToolCall,
)

ASK = {"role": "user", "content": "Go on."}
NOVA_CALL = ServerToolCall(
    "tooluse_1",
    "nova_code_interpreter",
    {"code": "1 + 1"},
    raw={"toolUse": {"toolUseId": "tooluse_1", "name": "nova_code_interpreter", "input": {}}},
)
NOVA_RESULT = ServerToolResult(
    "tooluse_1",
    "nova_code_interpreter_result",
    [{"text": "2"}],
    raw={"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "2"}]}},
)
# Anthropic's own server tool: no place in Converse.
WEB_SEARCH = ServerToolCall(
    "srvtoolu_1",
    "web_search",
    {"query": "q"},
    raw={"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
)
CALL = ToolCall(0, "tooluse_2", "f", "{}")


def _bedrock_turn(*blocks: Any) -> list[JSONObject]:
    m = Message(tool_calls=(CALL,), blocks=blocks)
    body = json.loads(
        rs.request("bedrock", model="m", messages=[ASK, m], base_url="http://h").content
    )
    content: list[JSONObject] = body["messages"][1]["content"]
    return content


@pytest.fixture(autouse=True)
def _aws(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "x")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)


@pytest.mark.parametrize(
    ("blocks", "expected"),
    [
        (
            (NOVA_CALL, NOVA_RESULT, TextBlock("2."), CALL),
            [NOVA_CALL.raw, NOVA_RESULT.raw, {"text": "2."}, "call"],
        ),
        ((WEB_SEARCH, TextBlock("2."), CALL), [{"text": "2."}, "call"]),
        ((ServerToolCall("x", "y", raw=None), CALL), ["call"]),
    ],
    ids=["bedrock-server-tools-in-place", "another-dialects-left-out", "no-raw-left-out"],
)
def test_bedrock_sends_its_own_server_tools_back(blocks: Any, expected: list[Any]) -> None:
    call = {"toolUse": {"toolUseId": "tooluse_2", "name": "f", "input": {}}}
    assert _bedrock_turn(*blocks) == [call if e == "call" else e for e in expected]


def _responses_input(text: str, output: list[Any]) -> list[JSONObject]:
    m = Message(
        content=text,
        blocks=(TextBlock(text),),
        metadata={"response": {"output": output}},
    )
    request = rs.request("openai-responses", model="m", messages=[ASK, m], api_key="k")
    items: list[JSONObject] = json.loads(request.content)["input"][1:]
    return items


ITEM = {
    "id": "msg_1",
    "type": "message",
    "status": "completed",
    "role": "assistant",
    "content": [{"type": "output_text", "text": "Hi", "annotations": []}],
}
BARE = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi"}]}


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ([ITEM], [ITEM]),
        ([{**ITEM, "content": [{"type": "output_text", "text": "other"}]}], [BARE]),
        ([{**ITEM, "content": [{"type": "refusal", "refusal": "no"}]}], [BARE]),
        ([{**ITEM, "content": "Hi"}], [BARE]),
        ([ITEM, ITEM], [BARE]),
    ],
    ids=["as-it-came", "other-text", "not-output-text", "content-not-a-list", "count-differs"],
)
def test_responses_text_goes_back_as_its_message_item_when_it_is_that_item(
    output: list[Any], expected: list[Any]
) -> None:
    assert _responses_input("Hi", output) == expected


def _reasoning_turn(stream_id: str, final_id: str, text: str) -> Message:
    """A Responses turn whose reasoning item the stream named `stream_id` and the final
    response `final_id` (as OpenRouter does), then a call."""
    streamed = {"id": stream_id, "type": "reasoning", "summary": [], "encrypted_content": text}
    state = rs.ReasoningState("reasoning_item", text, id=stream_id, raw=streamed)
    call = ToolCall(0, f"call_{final_id}", "f", "{}")
    final = {**streamed, "id": final_id, "summary": [{"type": "summary_text", "text": text}]}
    return Message(
        tool_calls=(call,),
        blocks=(rs.models.ReasoningBlock(text, state), call),
        reasoning_state=(state,),
        metadata={"response": {"output": [final]}},
    )


def test_responses_each_turn_sends_back_its_own_final_reasoning_item() -> None:
    # Two turns whose streams named their reasoning items alike: each goes back as its own
    # response's final item (a lookup by that id across the conversation gave both the last).
    turns = [_reasoning_turn("rs_0", "rs_a", "first"), _reasoning_turn("rs_0", "rs_b", "second")]
    messages: list[Any] = [ASK]
    for turn in turns:
        messages += [turn, {"role": "tool", "tool_call_id": turn.tool_calls[0].id, "content": "1"}]
    body = json.loads(
        rs.request("openai-responses", model="m", messages=messages, api_key="k").content
    )
    reasoning = [item for item in body["input"] if item.get("type") == "reasoning"]
    assert [(item["id"], item["encrypted_content"]) for item in reasoning] == [
        ("rs_a", "first"),
        ("rs_b", "second"),
    ]


def test_responses_a_tool_the_provider_ran_goes_back_as_its_final_item() -> None:
    # As the openai SDK sends it back (`input += response.output`): between the reasoning
    # and the calls, where it came, as the final response holds it.
    streamed = {"id": "ws_1", "type": "web_search_call", "status": "in_progress"}
    final = {**streamed, "status": "completed", "action": {"type": "search", "query": "q"}}
    search = ServerToolCall("ws_1", "web_search", {}, raw=streamed)
    call = ToolCall(0, "call_1", "f", "{}")
    foreign = ServerToolCall("srvtoolu_1", "web_search", {}, raw=WEB_SEARCH.raw)
    m = Message(
        tool_calls=(call,),
        blocks=(search, foreign, NOVA_CALL, call),
        metadata={"response": {"output": [final]}},
    )
    body = json.loads(
        rs.request("openai-responses", model="m", messages=[ASK, m], api_key="k").content
    )
    # Anthropic's and Bedrock's server tools have no place in Responses: not sent.
    assert [item.get("type") for item in body["input"][1:]] == ["web_search_call", "function_call"]
    assert body["input"][1] == final
    alone = Message(tool_calls=(call,), blocks=(search, call))
    body = json.loads(
        rs.request("openai-responses", model="m", messages=[ASK, alone], api_key="k").content
    )
    assert body["input"][1] == streamed


COHERE_CITATION = {
    "start": 0,
    "end": 2,
    "text": "Hi",
    "sources": [{"type": "document", "id": "d0"}, {"type": "tool", "id": "t0"}],
    "type": "TEXT_CONTENT",
}
BARE_COHERE = {"start": 0, "end": 2, "text": "Hi", "sources": []}


@pytest.mark.parametrize(
    ("citations", "expected"),
    [
        (
            # One citation-start with two sources gives two Citations: it goes back once.
            (
                rs.Citation("document", text="Hi", start=0, end=2, raw=COHERE_CITATION),
                rs.Citation("tool", text="Hi", start=0, end=2, raw=COHERE_CITATION),
                rs.Citation("citation", text="Hi", start=0, end=2, raw=BARE_COHERE),
            ),
            [COHERE_CITATION, BARE_COHERE],
        ),
        (
            (
                rs.Citation("url_citation", "https://a", raw={"type": "url_citation", "url": "u"}),
                rs.Citation("grounding", start=0, end=2),
                rs.Citation("web", raw={"title": "T", "location": {"web": {"url": "u"}}}),
            ),
            None,
        ),
    ],
    ids=["cohere-citations-once-each", "another-dialects-left-out"],
)
def test_cohere_sends_its_own_citations_back(citations: Any, expected: Any) -> None:
    m = Message(content="Hi", citations=citations)
    body = json.loads(rs.request("cohere", model="m", messages=[ASK, m], api_key="k").content)
    assert body["messages"][1].get("citations") == expected
    assert body["messages"][1]["content"] == "Hi"


WEB = {"type": "web_search_result_location", "url": "https://a", "encrypted_index": "E=="}


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        (TextBlock("a"), {"type": "text", "text": "a"}),
        (TextBlock("a", ()), {"type": "text", "text": "a", "citations": []}),
        (
            TextBlock("a", (rs.Citation(WEB["type"], raw=WEB, whole_block=True),)),
            {"type": "text", "text": "a", "citations": [WEB]},
        ),
        # Another dialect's citations (no Anthropic object in `raw`): the text alone.
        (
            TextBlock("a", (rs.Citation("grounding", start=0, end=1),)),
            {"type": "text", "text": "a"},
        ),
    ],
    ids=["no-list", "empty-list", "anthropic-citations", "another-dialects"],
)
def test_anthropic_text_blocks_keep_their_citations_list(block: Any, expected: Any) -> None:
    m = Message(content="a", blocks=(block,))
    body = json.loads(rs.request("anthropic", model="m", messages=[ASK, m], api_key="k").content)
    assert body["messages"][1]["content"] == [expected]
