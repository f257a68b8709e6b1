"""Decision targets (a policy's `decide_within`): whether an approval was, or is being,
decided later than its policy wants. Pure functions; the surfaces say it, nothing waits on it."""

from __future__ import annotations

from datetime import datetime
from datetime import timedelta

from runtime.approvals.policy import Policy
from store import Approval
from store import ApprovalState


def due_by(approval: Approval, policy: Policy) -> datetime | None:
    """When the approval should be decided by; None without a target."""
    target = policy.decide_within
    return approval.created_at + target if target is not None else None


def missed(approval: Approval, policy: Policy, now: datetime) -> bool:
    """Decided after its target, or still pending past it."""
    due = due_by(approval, policy)
    if due is None:
        return False
    if approval.state == ApprovalState.PENDING:
        return now > due
    return approval.decided_at is not None and approval.decided_at > due


def duration_text(value: timedelta) -> str:
    """`30m`, `4h`, `1d`, `45s`: the largest unit that divides it."""
    whole = int(value.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if whole >= size and whole % size == 0:
            return f"{whole // size}{unit}"
    return f"{whole}s"
