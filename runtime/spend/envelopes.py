"""Envelopes as pure functions: what an envelope approves (its condition and amount for a
call), the approval it makes, and its audit events. The commands that store, confirm,
revoke and end envelopes are `runtime.spend.desk.SpendDesk`'s.

An envelope only ever approves at once calls of its own tool that wait for a person, only
within what is left of it, before it expires, never past the tool's ceiling
(`[learned_rules] ceilings`) or a limit, and never a call a rule denied or could not route.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from runtime import errors
from runtime.approvals import SYSTEM_ACTOR, RuleEvaluationError, rule_holds
from runtime.spend.counting import CallValues, LimitEvaluationError
from store import Approval, ApprovalState, AuditEvent
from store.records import Envelope, RuleMatch
from store.spend import EnvelopeTry


class EnvelopeRefused(errors.InvalidRequest):
    """This envelope may not be made, confirmed or revoked (the message says why)."""


class EnvelopeNotFound(errors.SignoffRuntimeError):
    """No envelope with this id."""


def attempt(
    envelope: Envelope,
    context: Mapping[str, Any],
    call: CallValues,
    *,
    ceiling: str | None,
    shadow: bool,
) -> EnvelopeTry | None:
    """The call's try on an envelope whose condition (and the tool's ceiling) holds for it;
    None if either does not, or fails to evaluate, or its amount cannot be worked out."""
    try:
        if not rule_holds(envelope.condition, context):
            return None
        if ceiling is not None and not rule_holds(ceiling, context):
            return None
        amount = call.amount(envelope.amount) if envelope.amount else 0
    except (RuleEvaluationError, LimitEvaluationError):
        return None  # an envelope that cannot be evaluated never approves
    quorum = 2 if envelope.confirmed_by else 1
    return EnvelopeTry(envelope.id, amount, shadow or envelope.mode == "shadow", quorum)


def approved_by(approval: Approval, envelope: Envelope) -> Approval:
    """The approval, approved at once by `envelope`, citing it."""
    summary = f"envelope {envelope.id} ({envelope.reason}, by {envelope.author}) → approved at once"
    before = approval.rule
    match = RuleMatch(
        kind=before.kind if before else "no_match",
        action="auto_approve",
        when=envelope.condition,
        label=envelope.reason,
        summary=summary,
        policy=before.policy if before else {},
        limits=before.limits if before else (),
        shadow=before.shadow if before else (),
        envelope_id=envelope.id,
    )
    return approval.model_copy(
        update={
            "rule": match,
            "state": ApprovalState.APPROVED,
            "decided_by": SYSTEM_ACTOR,
            "decided_at": approval.created_at,
            "reason": summary,
            "deadline": None,
            "next_reminder_at": None,
            "approved_digest": approval.shown_digest,
        }
    )


def may_apply(approval: Approval) -> bool:
    """A call an envelope may approve: waiting for a person, not over a key conflict (a
    person's call), not routed by a rule that failed to evaluate."""
    match = approval.rule
    if approval.state != ApprovalState.PENDING or approval.conflict is not None:
        return False
    return match is None or (match.action == "ask" and match.kind != "error")


def event(action: str, actor: str, envelope: Envelope, at: datetime, **more: Any) -> AuditEvent:
    detail = {
        "envelope_id": envelope.id,
        "tool": envelope.tool,
        "when": envelope.condition,
        "reason": envelope.reason,
        "max_amount": envelope.max_amount,
        "max_calls": envelope.max_calls,
        "expires_at": envelope.expires_at.isoformat(),
    }
    return AuditEvent(action=action, actor=actor, at=at, detail=detail | more)
