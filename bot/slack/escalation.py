"""What a pending card and its reminders say about escalation and waiting: who is asked now,
when the next reminder goes, who is asked next if nobody answers and when, and how long the
approval has waited. Worked out from the policy the approval was asked under and its own
schedule (`next_reminder_at`, `reminders_sent`, `escalated`), as the runtime's timers will
act on them (`runtime.approvals.timers`)."""

from __future__ import annotations

from datetime import datetime
from datetime import timedelta

from bot import words
from bot.slack import blocks as kit
from bot.slack.home_view import age
from runtime.approvals import Policy
from runtime.records import Approval

MAX_NAMED = 5


def chain_line(approval: Approval, policy: Policy) -> str:
    """`Asked now: @bob @ann · next reminder <date> · then @oncall <date> if nobody answers`."""
    escalation = escalates_at(approval, policy)
    then = None
    if escalation is not None and policy.escalate_to:
        then = (kit.target(policy.escalate_to), kit.date(escalation))
    expires = None
    if approval.deadline is not None and policy.on_timeout == "decline":
        expires = kit.date(approval.deadline)
    reminder = approval.next_reminder_at
    return words.chain(
        _asked_now(approval, policy),
        next_reminder=kit.date(reminder) if reminder is not None else None,
        then=then,
        expires=expires,
    )


def waited_line(approval: Approval, now: datetime) -> str:
    """How long a reminder's approval has waited."""
    return words.waited(age(now - approval.created_at))


def escalates_at(approval: Approval, policy: Policy) -> datetime | None:
    """When the approval will be escalated, if nobody answers; None if it will not be (or
    already was)."""
    if approval.escalated or not policy.escalate_to:
        return None
    candidates = []
    if policy.remind_every is not None and approval.next_reminder_at is not None:
        # The tick after the last reminder escalates: max_reminders + 1 ticks in all.
        ticks_left = policy.max_reminders - approval.reminders_sent
        step: timedelta = policy.remind_every
        candidates.append(approval.next_reminder_at + step * max(ticks_left, 0))
    if policy.on_timeout == "escalate" and approval.deadline is not None:
        candidates.append(approval.deadline)
    return min(candidates) if candidates else None


def _asked_now(approval: Approval, policy: Policy) -> str:
    asked = list(policy.approvers)
    if approval.escalated and policy.escalate_to:
        asked.append(policy.escalate_to)
    if not asked:
        return words.ANYONE_BUT_THE_REQUESTER
    return " ".join(kit.target(i) for i in list(dict.fromkeys(asked))[:MAX_NAMED])
