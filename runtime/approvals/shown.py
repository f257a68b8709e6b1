"""What an approver is shown, as plain text: the words every surface renders in its own
format (a Slack card, the console, the CLI), from the approval's stored fields only. Its digest
is "what the card showed" in a receipt, so a receipt binds the decision to the arguments,
the context and the reason that were in front of the person."""

from __future__ import annotations

import json
from typing import Any

from store import Approval
from store.digest import canonical_digest
from store.digest import canonical_json


def card_text(approval: Approval) -> str:
    """The approval's shown text: tool, arguments (masked), policy and rule, who asked, the
    agent's stated reason and the context the tool gathered."""
    lines = [f"{approval.tool} (policy {approval.policy})"]
    if approval.rule is not None:
        lines.append(f"rule: {approval.rule.summary}")
    for name, value in sorted(approval.shown_args.items()):
        lines.append(f"{name}: {_value(value)}")
    lines.append(f"asked by: {approval.requested_by or 'unknown'}")
    if approval.reasked and approval.reasked.get("why") == "question":
        by, text = approval.reasked.get("by", ""), approval.reasked.get("text", "")
        lines.append(f"question from {by}: {text}")
    elif approval.reasked:
        lines.append(f"asked again: {approval.reasked.get('text', '')}")
    if approval.context is None and approval.context_error:
        lines.append(f"context unavailable: {approval.context_error}")
    if approval.agent_reason:
        lines.append(f"agent's reason: {approval.agent_reason}")
    return "\n".join(lines)


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def card_digest(approval: Approval) -> str:
    """The digest of what the approver was shown: the text and the context, canonical."""
    shown = approval.shown()
    return canonical_digest(canonical_json({"text": card_text(approval), "context": shown.context}))
