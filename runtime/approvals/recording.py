"""Writing a decision: its audit event (what was approved, the digests it binds, each edit)
and the compare-and-set in the store, for a person's decision or vote and for the system's
(expiry, withdrawal); a lost race names who won."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from runtime import errors
from runtime.approvals.binding import differences
from runtime.approvals.naming import about
from runtime.approvals.naming import decided_text
from runtime.approvals.naming import decision_text
from runtime.approvals.naming import log_ids
from store import Approval
from store import ApprovalState
from store import AuditEvent
from store import Store
from store import errors as store_errors
from store.base import Ruling
from store.digest import args_digest
from store.records import masked

log = logging.getLogger("signoff.approvals")


def approved_digest(
    approval: Approval, state: ApprovalState, approved_args: dict[str, Any] | None
) -> str | None:
    """The digest of what an approval approves (the edit, else the arguments shown)."""
    if state != ApprovalState.APPROVED:
        return None
    return args_digest(approved_args if approved_args is not None else approval.args)


def decision_event(approval: Approval, ruling: Ruling) -> AuditEvent:
    """The audit event of a decision (`approval_approved`, `approval_declined`), or of a
    question back to the agent (`approval_asked`, the question its reason); a delegate's
    says whom for (`for`)."""
    asked = ruling.question is not None
    return AuditEvent(
        action="approval_asked" if asked else f"approval_{ruling.state.value}",
        actor=ruling.by,
        run_id=approval.run_id,
        approval_id=approval.id,
        at=ruling.at,
        detail={
            "reason": ruling.reason,
            "tool": approval.tool,
            "policy": approval.policy,
            **(
                {"approved_args": masked(ruling.approved_args, approval.sensitive)}
                if ruling.approved_args
                else {}
            ),
            **_binding_detail(approval, ruling),
            **({"for": ruling.decided_for} if ruling.decided_for else {}),
        },
    )


async def record(
    store: Store,
    approval: Approval,
    state: ApprovalState,
    *,
    by: str,
    reason: str | None,
    at: datetime,
    due_only: bool = False,
) -> Approval:
    """Compare-and-set the system's decision (an expiry, a withdrawal: it never edits or
    re-keys the call) with its audit event."""
    digest = approved_digest(approval, state, None)
    ruling = Ruling(state, by=by, at=at, reason=reason, approved_digest=digest)
    event = decision_event(approval, ruling)
    try:
        return await store.decide_approval(approval.id, ruling, due_only=due_only, event=event)
    except store_errors.AlreadyDecided as exc:
        raise already_decided(exc) from None
    except store_errors.Expired as exc:
        raise errors.ApprovalExpired(str(exc), approval=approval) from None


def log_decided(approval: Approval) -> None:
    log.info("%s %s", about(approval), decision_text(approval), extra=log_ids(approval, "decided"))


def already_decided(exc: store_errors.AlreadyDecided) -> errors.AlreadyDecided:
    """The store lost a race to another decision: say who won, and when."""
    approval = getattr(exc, "approval", None)
    text = decided_text(approval) if isinstance(approval, Approval) else str(exc)
    return errors.AlreadyDecided(text, approval=approval)


def _binding_detail(approval: Approval, ruling: Ruling) -> dict[str, Any]:
    """What the audit says of the call a decision binds: the digests shown and approved, each
    edited argument (proposed -> approved), and a choice to run it as a separate effect."""
    if ruling.approved_digest is None:
        return {}
    # A digest of arguments with a secret in them could be matched by guessing: not shown.
    detail: dict[str, Any] = {}
    if not approval.sensitive:
        detail |= {"args_digest": approval.shown_digest, "approved_digest": ruling.approved_digest}
    if ruling.approved_args is not None:
        shown, approved = (
            masked(approval.args, approval.sensitive),
            masked(ruling.approved_args, approval.sensitive),
        )
        edits = {
            name: {"proposed": a, "approved": b} for name, a, b in differences(shown, approved)
        }
        if edits:
            detail["edited"] = edits
    if ruling.key_suffix is not None:
        detail["separate"] = {
            "key_suffix": ruling.key_suffix,
            "conflict": approval.conflict and approval.conflict.model_dump(mode="json"),
        }
    return detail
