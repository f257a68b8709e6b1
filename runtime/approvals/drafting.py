"""What a new approval is drafted from (the facts its rules see, whether its policy
reminds; `ApprovalDesk.new_approval` drafts it) and what an approver must be shown with it:
another run's request for the same effect, and an earlier effect that used its key with
other arguments."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from datetime import datetime
from datetime import timedelta

from runtime.approvals.binding import conflict_of
from runtime.approvals.policy import Policy
from runtime.approvals.rules import Facts
from store import Approval
from store import Run
from store import Store
from store import errors as store_errors
from store.records import EffectConflict

log = logging.getLogger("signoff.approvals")

DUPLICATE_WINDOW = timedelta(days=7)  # how long an approved request marks later ones


async def with_duplicate(store: Store, approval: Approval, now: datetime) -> Approval:
    """The approval naming another run that asked for the same effect (same idempotency
    key, another lineage), pending or approved within DUPLICATE_WINDOW: two requests to
    refund one order are shown to the approver as possible duplicates."""
    if approval.idempotency_key is None:
        return approval
    other = await store.duplicate_approval(
        approval.idempotency_key, lineage_id=approval.lineage_id, since=now - DUPLICATE_WINDOW
    )
    if other is None or other.run_id is None:
        return approval
    asked = other.shown_approved_args or other.shown_args
    return approval.model_copy(update={"duplicate_of": other.run_id, "duplicate_args": asked})


async def with_conflict(store: Store, approval: Approval) -> Approval:
    """The approval naming the earlier effect made under its key with other arguments,
    if any: approving it as it is would not do what the approver sees."""
    conflict = await key_conflict(store, approval, approval.shown_digest)
    return approval if conflict is None else approval.model_copy(update={"conflict": conflict})


async def key_conflict(store: Store, approval: Approval, digest: str) -> EffectConflict | None:
    """The earlier effect under the approval's key whose arguments' digest is not `digest`."""
    if approval.idempotency_key is None:
        return None
    other = await store.conflicting_effect(approval.idempotency_key, digest)
    if other is None:
        return None
    approved = None
    if other.approval_id is not None:
        with contextlib.suppress(store_errors.NotFound):
            approved = await store.get_approval(other.approval_id)
    return conflict_of(other, approved)


def facts_of(
    run: Run | None,
    requested_by: str | None,
    now: datetime,
    limits: Mapping[str, Mapping[str, int]] | None = None,
) -> Facts:
    if run is None:
        return Facts(requested_by=requested_by or "", now=now, limits=limits or {})
    return Facts(
        run_id=run.id,
        agent=run.agent,
        task=run.task,
        requested_by=run.requested_by or "",
        usage=run.usage.model_dump(),
        now=now,
        limits=limits or {},
    )


def reminds(policy: Policy) -> bool:
    return policy.remind_every is not None and (
        policy.max_reminders > 0 or bool(policy.escalate_to)
    )
