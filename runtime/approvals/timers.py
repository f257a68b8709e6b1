"""The approvals' timed work, which the scheduler triggers: expiry at a deadline, reminders,
escalation, and noting that a waiter's heartbeat lapsed (`runtime.approvals.askers`). Each
change is a compare-and-set in the store, so a timer that fires twice, or in two processes
at once, acts once."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from typing import Protocol

from runtime import errors
from runtime.announcer import Announcer
from runtime.approvals.naming import about
from runtime.approvals.naming import log_ids
from runtime.approvals.naming import overdue
from runtime.approvals.policy import Policy
from store import Approval
from store import Store
from store import errors as store_errors

log = logging.getLogger("signoff.approvals")


class Deciding(Protocol):
    """What the timers need of the desk: its store, an approval's policy, and expiring it."""

    store: Store

    def policy_of(self, approval: Approval) -> Policy: ...

    async def decline_expired(self, approval: Approval) -> Approval: ...


async def tick(desk: Deciding, announcer: Announcer, now: datetime) -> datetime | None:
    """Expire, remind and escalate whatever is due; return when the next thing falls due."""
    limit = 500
    while True:
        due = await desk.store.due_approvals(limit=limit)
        # Independent approvals, each acted on by compare-and-set: their writes share
        # group commits instead of paying one fsync each.
        acted = await asyncio.gather(*(_due(desk, announcer, approval, now) for approval in due))
        if len(due) < limit or not any(acted):
            return await desk.store.next_due_at()


async def _due(desk: Deciding, announcer: Announcer, approval: Approval, now: datetime) -> bool:
    """Act on one due approval; False if someone else already did (or it failed)."""
    policy = desk.policy_of(approval)
    try:
        if overdue(approval, now):
            await _deadline_passed(desk, announcer, approval, policy, now)
        elif approval.next_reminder_at is not None and approval.next_reminder_at <= now:
            await _remind(desk, announcer, approval, policy, now)
        if approval.waiter_until is not None and approval.waiter_until <= now:
            await _waiter_left(desk, approval)
        return True
    except (errors.AlreadyDecided, store_errors.Conflict):
        log.info("approval %s changed while its timer fired; nothing to do", approval.id)
    except Exception:
        log.exception("approval %s: timed action failed; it stays due", approval.id)
    return False


async def _waiter_left(desk: Deciding, approval: Approval) -> None:
    """The waiter's heartbeat lapsed: nobody waits for the answer now (the card says so)."""
    if await desk.store.waiter_left(approval.id):
        log.info(
            "%s: nobody is waiting for its answer now (the waiter's heartbeat lapsed)",
            about(approval),
            extra=log_ids(approval, "waiter_left"),
        )


async def _deadline_passed(
    desk: Deciding, announcer: Announcer, approval: Approval, policy: Policy, now: datetime
) -> None:
    if policy.on_timeout == "escalate":
        moved = await desk.store.extend_deadline(
            approval.id, deadline=None, expected=approval.deadline
        )
        if moved and not approval.escalated:  # escalated by reminders: told once already
            log.info(
                "%s: deadline passed; escalated to %s, still waiting",
                about(approval),
                policy.escalate_to or "its approvers",
            )
            escalated = approval.model_copy(update={"escalated": True, "deadline": None})
            await announcer.reminder(escalated, escalated=True)
        elif moved:
            log.info("%s: deadline passed; already escalated, still waiting", about(approval))
        return
    await desk.decline_expired(approval)


async def _remind(
    desk: Deciding, announcer: Announcer, approval: Approval, policy: Policy, now: datetime
) -> None:
    sent = approval.reminders_sent + 1
    escalate = sent > policy.max_reminders
    if escalate and (approval.escalated or not policy.escalate_to):
        stopped = await desk.store.record_reminder(
            approval.id,
            reminders_sent=sent,
            next_reminder_at=None,
            escalated=approval.escalated,
        )
        if stopped:
            log.info("%s: no more reminders; still waiting", about(approval))
        return
    more = policy.remind_every is not None and (
        sent < policy.max_reminders or (not escalate and bool(policy.escalate_to))
    )
    next_at = now + policy.remind_every if more and policy.remind_every else None
    recorded = await desk.store.record_reminder(
        approval.id,
        reminders_sent=sent,
        next_reminder_at=next_at,
        escalated=approval.escalated or escalate,
    )
    if recorded:
        if escalate:
            log.info(
                "%s: escalated to %s after %d reminder(s)",
                about(approval),
                policy.escalate_to,
                sent - 1,
                extra=log_ids(approval, "escalated"),
            )
        else:
            log.info(
                "%s: reminder %d sent", about(approval), sent, extra=log_ids(approval, "reminded")
            )
        current = approval.model_copy(
            update={"reminders_sent": sent, "escalated": approval.escalated or escalate}
        )
        await announcer.reminder(current, escalated=escalate)
