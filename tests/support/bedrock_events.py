"""Bedrock ConverseStream events written by hand, as the service sends them (padding included).

`event(name, payload)` is any event; `delta`, `start`, `stop`, `MESSAGE_START`, `message_stop`
and `metadata` the ones a stream is made of, `exception` an exception message.
"""

from __future__ import annotations

import json
from typing import Any

from rxstream.models import EventStreamMessage

PAD = "abcdefghijklmnop"


def event(name: str, payload: Any = None, **headers: Any) -> EventStreamMessage:
    """A ConverseStream event as Bedrock sends it (with the `p` padding field)."""
    body = payload if isinstance(payload, bytes) else json.dumps({**(payload or {}), "p": PAD})
    return EventStreamMessage(
        {
            ":event-type": name,
            ":content-type": "application/json",
            ":message-type": "event",
            **headers,
        },
        body.encode() if isinstance(body, str) else body,
    )


def exception(kind: str, payload: Any) -> EventStreamMessage:
    return EventStreamMessage(
        {
            ":exception-type": kind,
            ":content-type": "application/json",
            ":message-type": "exception",
        },
        json.dumps(payload).encode(),
    )


def delta(index: int, body: Any) -> EventStreamMessage:
    return event("contentBlockDelta", {"contentBlockIndex": index, "delta": body})


def start(index: int, body: Any) -> EventStreamMessage:
    return event("contentBlockStart", {"contentBlockIndex": index, "start": body})


def stop(index: int) -> EventStreamMessage:
    return event("contentBlockStop", {"contentBlockIndex": index})


MESSAGE_START = event("messageStart", {"role": "assistant"})


def message_stop(reason: str = "end_turn", **extra: Any) -> EventStreamMessage:
    return event("messageStop", {"stopReason": reason, **extra})


def metadata(**usage: int) -> EventStreamMessage:
    return event("metadata", {"usage": usage, "metrics": {"latencyMs": 5}})
