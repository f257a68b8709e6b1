"""A decision's receipt is stored once: the first one written stays (two processes signing
at once keep one), and a pending approval takes none."""

from __future__ import annotations

from datetime import UTC
from datetime import datetime

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from runtime.approvals import receipts
from runtime.signing import Signer
from store import Approval
from store import ApprovalState
from store import Store
from store.base import Ruling


async def test_the_first_receipt_stored_stays(store: Store) -> None:
    approval = Approval(id="ap-r1", tool="issue_refund", args={"order_id": "1"})
    await store.create_approval(approval)
    assert (await store.set_receipt(approval.id, {"x": 1})).receipt is None  # pending: none
    at = datetime(2026, 11, 29, 9, 5, tzinfo=UTC)
    decided = await store.decide_approval(
        approval.id, Ruling(ApprovalState.APPROVED, by="U0BOB", at=at)
    )
    one, two = (Signer(Ed25519PrivateKey.generate()) for _ in range(2))
    first = one.sign(receipts.document(decided, []))

    assert (await store.set_receipt(approval.id, first)).receipt == first
    assert (
        await store.set_receipt(approval.id, two.sign(receipts.document(decided, [])))
    ).receipt == first
    assert (await store.get_approval(approval.id)).receipt == first
