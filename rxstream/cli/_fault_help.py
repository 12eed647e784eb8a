"""`rxstream fake-server --help`'s part on faults (text only: the parser builds with no server).

The syntax is read by `rxstream.testing.parse_fault`; a test parses every
example here with it.
"""

from __future__ import annotations

__all__ = ["FAULT_EXAMPLES", "FAULT_HELP"]

#: Each spec the help shows, with what it does.
FAULT_EXAMPLES = (
    ("ok", "no fault (also: none)"),
    ("cut:3", "the first 3 pieces of the answer, then the connection closes mid-body"),
    ("reset:3", "the first 3 pieces, then a TCP reset"),
    ("stall:2.5", "everything but the end marker, 2.5 s of silence (at most 30), the end"),
    ("stall:forever", "everything but the end marker, then silence until the client leaves"),
    ("stall:5@1", "5 s of silence after the first piece"),
    ("error", "the dialect's own error event halfway through the answer"),
    ("error:overloaded@2", "an overloaded error event after 2 pieces (or rate-limit, server)"),
    ("429:retry-after=2", "HTTP 429 in the dialect's error shape, Retry-After: 2 (default 1)"),
    ("529", "HTTP 529, Anthropic's overloaded_error (any status 400-599 works)"),
    ("503:retry-after=5", "HTTP 503 with Retry-After: 5"),
    ("overloaded", "529 for anthropic, 503 for every other dialect"),
)

FAULT_HELP = "\n".join(
    [
        "faults (--fault SPEC, or a request's x-rxstream-fault: SPEC header, which wins):",
        *(f"  {spec:<20} {what}" for spec, what in FAULT_EXAMPLES),
        "A piece is one delta of the answer (one event in most dialects). The Nth request",
        "gets the Nth --fault, the last one repeating: --fault 429,cut:3,ok answers a 429,",
        "then a cut stream, then every request normally. Every fault is rendered in the",
        "asked dialect's terms (its error body, its error event).",
    ]
)
