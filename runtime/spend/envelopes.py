"""Envelopes as pure functions: what an envelope approves (its condition and amount for a
call), the approval it makes, and its audit events. The commands that store, confirm,
revoke and end envelopes are `runtime.spend.desk.SpendDesk`'s.

An envelope only ever approves at once calls of its own tool that wait for a person, only
within what is left of it, before it expires, never past the tool's ceiling
(`[learned_rules] ceilings`) or a limit, and never a call a rule denied or could not route.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from datetime import time
from datetime import timedelta
from decimal import Decimal
from decimal import InvalidOperation
from typing import Any

from runtime import errors
from runtime.approvals import RuleEvaluationError
from runtime.approvals import approved_at_once
from runtime.approvals import parse_duration
from runtime.approvals import rule_holds
from runtime.display import NO_MINOR_UNIT
from runtime.display import Display
from runtime.spend.counting import CallValues
from runtime.spend.counting import LimitEvaluationError
from store import Approval
from store import ApprovalState
from store import AuditEvent
from store.records import Envelope
from store.records import RuleMatch
from store.spend import EnvelopeTry


class EnvelopeRefused(errors.InvalidRequest):
    """This envelope may not be made, confirmed or revoked (the message says why)."""


class EnvelopeNotAllowed(errors.SignoffRuntimeError):
    """This person may not hand out, confirm or revoke this envelope (the message says who may)."""


class EnvelopeNotFound(errors.SignoffRuntimeError):
    """No envelope with this id."""


_TIME_OF_DAY = re.compile(r"^([01]?[0-9]|2[0-3]):([0-5][0-9])$")
_AMOUNT = re.compile(r"^[$€£]?\s*([0-9][0-9,]*(\.[0-9]+)?)$")


def lasting(text: str, now: datetime) -> timedelta:
    """How long an envelope lasts from `now`: a duration (`8h`, `2d`) or a time of day in
    UTC (`18:00`: the next one)."""
    text = text.strip()
    found = _TIME_OF_DAY.match(text)
    if found is None:
        try:
            length: timedelta = parse_duration(text, unit_required=True)
        except ValueError:
            raise EnvelopeRefused(
                f"until: {text[:40]!r} is neither a time of day (18:00, UTC) nor a duration (8h)"
            ) from None
        return length
    at = datetime.combine(now.date(), time(int(found[1]), int(found[2])), now.tzinfo)
    return (at if at > now else at + timedelta(days=1)) - now


def budget(text: str, currency: str | None) -> int:
    """An amount as a person types it (`2000`, `$2,000`, `2000.50`), in the minor unit of
    `currency` (cents), or a whole number when there is none."""
    found = _AMOUNT.match(text.strip())
    try:
        value = Decimal(found[1].replace(",", "")) if found else None
    except InvalidOperation:
        value = None
    digits = 0 if currency is None or currency in NO_MINOR_UNIT else 2
    scaled = value.scaleb(digits) if value is not None else None
    if scaled is None or scaled != scaled.to_integral_value() or scaled < 1:
        unit = "a whole number" if digits == 0 else f"an amount in {currency} (e.g. 2000)"
        raise EnvelopeRefused(f"up to: {text.strip()[:40]!r} is not {unit}")
    return int(scaled)


def currency_of(display: Display | None, amount: str | None) -> str | None:
    """The currency an envelope's amounts are minor units of (`USD`), when it counts a
    money argument of its tool (`args.amount_cents`); None for a plain number."""
    if display is None or amount is None or not amount.startswith("args."):
        return None
    code = display.money.get(amount.removeprefix("args."))
    return code if code is not None and re.fullmatch(r"[A-Z]{3}", code) else None


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
    return approved_at_once(approval, match, approved_digest=approval.shown_digest)


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
