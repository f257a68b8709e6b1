"""What the model reads back for each tool call: results, errors, declines, dry runs.

Each is a tool message whose content is JSON, so a model (or a scripted policy) can tell a
result from a refusal without parsing prose.
"""

from __future__ import annotations

from typing import Any

from pydantic_core import to_json

from store import Approval, Message


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


def dry_run(call_id: str, tool: str, args: dict[str, Any]) -> Message:
    return _message(
        call_id,
        tool,
        {"executed": False, "dry_run": True, "would_call": tool, "args": args},
    )
