"""What the model reads back for each tool call: results, errors, declines, dry runs.

Each is a tool message whose content is JSON, so a model (or a scripted policy) can tell a
result from a refusal without parsing prose.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic_core import to_json

from store import Approval
from store import Message


def _message(call_id: str, tool: str, content: Any) -> Message:
    text = content if isinstance(content, str) else to_json(content).decode()
    return Message(role="tool", tool_call_id=call_id, name=tool, content=text)


def result(call_id: str, tool: str, value: Any) -> Message:
    return _message(call_id, tool, value)


def error(call_id: str, tool: str, reason: str) -> Message:
    return _message(call_id, tool, {"error": reason, "executed": False})


def failure(call_id: str, tool: str, reason: str) -> Message:
    return _message(call_id, tool, {"error": reason})


def declined(call_id: str, tool: str, approval: Approval) -> Message:
    if approval.question is not None:
        return asked(call_id, tool, approval)
    denied = approval.rule is not None and approval.rule.action == "deny"
    who = "A policy rule" if denied else "A human"
    return _message(
        call_id,
        tool,
        {
            "executed": False,
            "decision": "declined",
            "declined_by": approval.decided_by,
            "reason": approval.reason or "no reason given",
            "approval_id": approval.id,
            **({"rule": approval.rule.summary} if denied and approval.rule else {}),
            "instruction": f"{who} declined this call. Do not retry it; "
            "continue without it or tell the user.",
        },
    )


def cool_off_cancelled(call_id: str, tool: str, approval: Approval) -> Message:
    """An approved call a person cancelled in its cool-off: it never ran (issue 42.6)."""
    return _message(
        call_id,
        tool,
        {
            "executed": False,
            "decision": "cancelled",
            "approved_by": approval.decided_by,
            "cancelled_by": approval.cool_off_by,
            "approval_id": approval.id,
            "instruction": "The call was approved, then cancelled before it ran (cool-off). "
            "Nothing was done. Do not retry it; continue without it or tell the user.",
        },
    )


ASKS = "the approver asks: "
"""How an approver's question reads in the tool's result (`asked`)."""


def asked(call_id: str, tool: str, approval: Approval) -> Message:
    """An approver's question instead of a decision: the call did not run; the agent answers
    in its reason and calls again, which asks again showing the question and the answer."""
    return _message(
        call_id,
        tool,
        {
            "executed": False,
            "decision": "asked",
            "asked_by": approval.decided_by,
            "question": approval.question,
            "approval_id": approval.id,
            "said": ASKS + (approval.question or ""),
            "instruction": f"The call was not run: the approver asks a question first. "
            f"Answer it in your reply's text and call {tool} again to ask for approval "
            "again.",
        },
    )


def question_before(messages: Sequence[Message], tool: str) -> dict[str, Any] | None:
    """The question an approver asked about the last call of `tool` in the transcript, if
    that call's result was one: what a call asked again shows beside the agent's answer."""
    for message in reversed(messages):
        if message.role != "tool" or message.name != tool:
            continue
        if not message.content.startswith("{") or '"asked"' not in message.content:
            return None
        try:
            said = json.loads(message.content)
        except ValueError:
            return None
        if not isinstance(said, dict) or said.get("decision") != "asked":
            return None
        return {
            "why": "question",
            "text": str(said.get("question") or ""),
            "by": str(said.get("asked_by") or ""),
            "approval_id": str(said.get("approval_id") or ""),
        }
    return None


def dry_run(call_id: str, tool: str, args: dict[str, Any]) -> Message:
    return _message(
        call_id,
        tool,
        {"executed": False, "dry_run": True, "would_call": tool, "args": args},
    )
