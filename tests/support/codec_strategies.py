"""Item strategies for the wire codec's tests: every kind of item, with every field filled.

`items` draws any item the codec encodes; `every_field` lists all of an item's fields, those
outside equality included, so a round trip can be compared field by field. Shared by the codec's
tests, the run items', the rxstream JSON dialect's and the Redis stream's.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import strategies as st

import rxstream as rs

text = st.text(max_size=20)
small = st.integers(min_value=0, max_value=10**6)
opt_text = st.none() | text
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
json_objects = st.dictionaries(text, json_values, max_size=3)

usage = st.builds(
    rs.Usage,
    small,
    small,
    small,
    st.none() | small,
    st.none() | small,
    st.just(0),
    st.none() | json_objects,
)
calls = st.builds(rs.ToolCall, small, opt_text, opt_text, text, small, st.booleans(), json_values)
citations = st.builds(
    rs.Citation,
    text,
    opt_text,
    opt_text,
    opt_text,
    st.none() | small,
    st.none() | small,
    small,
    st.none() | json_objects,
    st.booleans(),
)
server_tools = st.builds(rs.ServerToolCall, opt_text, text, json_values, small) | st.builds(
    rs.ServerToolResult, opt_text, text, json_values, small, st.none() | json_objects
)
states = st.builds(rs.ReasoningState, text, text, text, opt_text, st.none() | small, small)
deltas = st.one_of(
    st.builds(rs.TextDelta, text, small),
    st.builds(rs.ReasoningDelta, text, small),
    st.builds(rs.RefusalDelta, text, small),
    st.builds(rs.ToolCallDelta, st.none() | small, text, opt_text, opt_text, small),
    st.builds(rs.Finish, text, small, opt_text),
    usage,
    citations,
    st.builds(rs.EmptyCitations, small, small, small, st.none() | json_objects),
    st.builds(rs.TextBlockStart, small, st.none() | json_objects),
    server_tools,
    states,
    st.builds(rs.Metadata, json_objects, small),
    st.builds(rs.Reset, small, text, small),
)
messages = st.builds(
    rs.Message,
    small,
    text,
    text,
    text,
    text,
    st.lists(calls, max_size=2).map(tuple),
    opt_text,
    st.none() | usage,
    opt_text,
    st.lists(citations, max_size=2).map(tuple),
    st.lists(server_tools, max_size=2).map(tuple),
    st.lists(states, max_size=2).map(tuple),
    json_objects,
    st.lists(
        st.builds(rs.TextBlock, text, st.none() | st.lists(citations, max_size=2).map(tuple))
        | st.builds(rs.ReasoningBlock, text, st.none() | states)
        | calls,
        max_size=3,
    ).map(tuple),
)
headers = st.dictionaries(
    text, st.one_of(text, st.binary(max_size=8), st.integers(), st.booleans()), max_size=3
)
items = st.one_of(
    deltas,
    messages,
    calls,
    st.builds(rs.SSEFrame, text, text, opt_text, st.none() | small),
    st.builds(rs.ChatChunk, json_objects),
    st.builds(rs.EventStreamMessage, headers, st.binary(max_size=16)),
    st.builds(
        rs.TokenCount,
        small,
        small,
        small,
        small,
        st.none() | usage,
        st.booleans(),
        small,
        st.booleans(),
        small,
    ),
)


def every_field(item: Any) -> dict[str, Any]:
    """All fields, those outside equality included (compared through their own fields)."""
    out = {}
    for f in dataclasses.fields(item):
        value = getattr(item, f.name)
        if dataclasses.is_dataclass(value):
            value = every_field(value)
        elif isinstance(value, tuple):
            value = [every_field(v) if dataclasses.is_dataclass(v) else v for v in value]
        out[f.name] = value
    return out
