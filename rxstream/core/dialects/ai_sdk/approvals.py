"""The `"ai-sdk"` dialect: the approval decisions a `useChat` request carries.

The AI SDK's UI message stream asks for an approval with a
`tool-approval-request` chunk (`AISDKRenderer` writes one per
`ApprovalRequest`, its `approvalId` `approval_id(call_id)`); the page decides
(`addToolApprovalResponse({id, approved, reason})`) and sends the decision
back in its next request: the tool part of the assistant's UI message is then
in state `approval-responded` with `approval: {"id", "approved", "reason"?}`.
Input: that request's `messages` (the UI messages). Output: an
`ApprovalResponse` per decided call, what a waiting run resumes with.

Follows the `ai` package (6.x): `ToolUIPart`'s approval states.
"""

from __future__ import annotations

from collections.abc import Sequence

from ....errors import MalformedChunkError
from ....models import JSON, ApprovalResponse
from .._shared import dumps

__all__ = ["approval_responses"]

#: The state of a tool part whose approval was decided and whose call has not run yet.
RESPONDED = "approval-responded"


def approval_responses(messages: JSON) -> list[ApprovalResponse]:
    """The decisions in a `useChat` request's UI messages (parts in state `approval-responded`).

    Args:
        messages: the request body's `messages` (a list of UI messages).

    Raises:
        MalformedChunkError: `messages` is not a list of objects, or a decided
            part has no string `toolCallId` or no boolean `approval.approved`.

    Example:
        >>> part = {"type": "tool-delete_file", "toolCallId": "call_1", "input": {},
        ...         "state": "approval-responded",
        ...         "approval": {"id": "approval-call_1", "approved": False, "reason": "no"}}
        >>> approval_responses([{"id": "m1", "role": "assistant", "parts": [part]}])
        [ApprovalResponse(call_id='call_1', approved=False, reason='no')]
    """
    out: list[ApprovalResponse] = []
    for message in _objects(messages, "messages"):
        parts = message.get("parts", [])
        for part in _objects(parts, "messages[].parts"):
            if part.get("state") == RESPONDED:
                out.append(_decision(part))
    return out


def _decision(part: dict[str, JSON]) -> ApprovalResponse:
    call_id = part.get("toolCallId")
    approval = part.get("approval")
    approved = approval.get("approved") if isinstance(approval, dict) else None
    reason = approval.get("reason") if isinstance(approval, dict) else None
    if not isinstance(call_id, str) or not isinstance(approved, bool):
        raise MalformedChunkError(
            "a tool part in state 'approval-responded' needs a string toolCallId and "
            "approval.approved true or false",
            dumps(part),
            dialect="ai-sdk",
        )
    return ApprovalResponse(call_id, approved, reason if isinstance(reason, str) else None)


def _objects(value: JSON, where: str) -> Sequence[dict[str, JSON]]:
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise MalformedChunkError(
            f"{where} must be a list of objects",
            dumps(value) if value is not None else "null",
            dialect="ai-sdk",
        )
    return value
