"""How approvals are named in log lines and refusals, and when one is overdue: shared by the
desk (deciding) and its timers (reminders, escalation, expiry)."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from runtime.approvals.policy import SYSTEM_ACTOR
from store import Approval
from store import ApprovalState

log = logging.getLogger("signoff.approvals")


def log_ids(approval: Approval, event: str) -> dict[str, Any]:
    """The fields a structured log line about an approval carries."""
    return {"approval_id": approval.id, "run_id": approval.run_id, "event": f"approval_{event}"}


def about(approval: Approval) -> str:
    """`approval ap_1 (issue_refund, run order-4471)`: the head of every log line."""
    run = f", run {approval.run_id}" if approval.run_id else ""
    return f"approval {approval.id} ({approval.tool}{run})"


def decision_text(approval: Approval) -> str:
    reason = approval.reason or ""
    if approval.decided_by == SYSTEM_ACTOR and reason == "expired":
        return "expired at its deadline: declined"
    if approval.decided_by == SYSTEM_ACTOR and reason.startswith("withdrawn"):
        return reason
    because = f": {reason!r}" if reason else ""
    return f"{approval.state.value} by {approval.decided_by}{because}"


def decided_text(approval: Approval) -> str:
    """Who decided and when (and why, for a decline): what a refused decider needs to know."""
    by = approval.decided_by or "?"
    when = f" at {approval.decided_at:%Y-%m-%d %H:%M:%S} UTC" if approval.decided_at else ""
    declined = approval.state == ApprovalState.DECLINED
    why = f" ({approval.reason})" if approval.reason and declined else ""
    decided = f"{approval.state.value} by {by}{when}{why}"
    return f"approval {approval.id} was already {decided}; a decision never changes"


def overdue(approval: Approval, now: datetime) -> bool:
    return approval.deadline is not None and approval.deadline <= now


def log_rule_decision(approval: Approval) -> None:
    """Log an approval a rule decided when it was made (the audit trail has it already: the
    database writes it with the approval)."""
    rule = approval.rule.summary if approval.rule else None
    log.info(
        "%s %s (%s)",
        about(approval),
        approval.state.value,
        rule,
        extra=log_ids(approval, approval.state.value),
    )
