"""Signed receipts of decisions: what a person approved (or declined), signed with Signoff's
key so the tool's provider, an auditor or a court can check it without trusting Signoff's
database (docs/policies.md, "Receipts").

A receipt names the approval, the decision, who made it and when, the digest of the
arguments approved, the digest of what the approver was shown (`shown.card_text` and the
context), the idempotency key the call runs under and the policy it was decided under. It is
a pure function of the decided approval, and Ed25519 signatures are deterministic, so a
receipt signed again (after a crash between the decision and its receipt) is the same one.
"""

from __future__ import annotations

import contextlib
from datetime import datetime
from typing import Any

from runtime.approvals.shown import card_digest
from runtime.runs import separate_key
from runtime.signing import Signer
from store import Approval
from store import ApprovalState
from store import Store
from store import errors as store_errors

RECEIPT_TYPE = "signoff.approval_receipt"
VERSION = 1


def policy_record(approval: Approval) -> dict[str, Any]:
    """The policy an approval was decided under: its authority, the record stored with it
    when it was asked (the policy's name, the rule that chose it, its settings and their
    digest); for an approval from before approvals carried one, what it kept of its rule."""
    record: dict[str, Any] = {
        "name": approval.policy,
        "required_approvals": approval.required_approvals,
    }
    if approval.authority is not None:
        return record | approval.authority.model_dump(mode="json", exclude={"filled"})
    if approval.rule is not None:
        record |= {"rule": approval.rule.summary, "settings": approval.rule.policy}
    return record


def document(approval: Approval, deciders: list[str]) -> dict[str, Any]:
    """The receipt's fields (unsigned) for a decided approval."""
    if approval.state == ApprovalState.PENDING or approval.decided_at is None:
        raise ValueError(f"approval {approval.id} is not decided: it has no receipt")
    key = approval.idempotency_key
    return {
        "type": RECEIPT_TYPE,
        "version": VERSION,
        "approval_id": approval.id,
        "run_id": approval.run_id,
        "call_id": approval.call_id,
        "tool": approval.tool,
        "decision": approval.state.value,
        "decided_by": approval.decided_by,
        "deciders": deciders or [approval.decided_by],
        "decided_at": _iso(approval.decided_at),
        "reason": approval.reason,
        "args_digest": approval.approved_digest or approval.shown_digest,
        "shown_args_digest": approval.shown_digest,
        "card_digest": card_digest(approval),
        "idempotency_key": None if key is None else separate_key(key, approval.key_suffix),
        "policy": policy_record(approval),
    }


def _iso(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


async def ensure(store: Store, signer: Signer | None, approval: Approval) -> Approval:
    """The decided approval with its receipt: signed and stored now unless it has one (a
    compare-and-set: two processes signing at once keep one). As it is without a signer."""
    if signer is None or approval.receipt is not None or approval.state == "pending":
        return approval
    deciders: list[str] = []
    if approval.required_approvals > 1 and approval.state == ApprovalState.APPROVED:
        deciders = await store.list_votes(approval.id)
    receipt = signer.sign(document(approval, deciders))
    with contextlib.suppress(store_errors.NotFound):
        return await store.set_receipt(approval.id, receipt)
    return approval
