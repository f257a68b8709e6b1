"""A decision through an e-mailed link (issue 43.2): the link is recorded as used in the
decision's own transaction, on every backend. A decision refused in that transaction (past
its deadline, already decided) leaves the link unused; a link used already refuses the
decision and changes nothing; of many decisions through one link at once, exactly one
counts, on an approval decided at once and on one whose quorum counts votes."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from store import Approval
from store import ApprovalState
from store import Run
from store import Store
from store import errors
from store.base import Ruling

from .builders import Clock
from .builders import MakeApproval

APPROVED, DECLINED = ApprovalState.APPROVED, ApprovalState.DECLINED


async def test_the_link_is_used_with_the_decision_and_refuses_a_second(
    store: Store, pending: Approval, clock: Clock
) -> None:
    assert await store.email_link_used("n1") is None
    decided = await store.cast_vote(
        pending.id, Ruling(APPROVED, by="eve@x.com", at=clock()), link_nonce="n1"
    )
    assert decided.approval.state == APPROVED
    assert await store.email_link_used("n1") is not None

    with pytest.raises(errors.LinkUsed):
        await store.cast_vote(
            pending.id, Ruling(DECLINED, by="eve@x.com", at=clock()), link_nonce="n1"
        )
    assert await store.get_approval(pending.id) == decided.approval


async def test_a_decision_refused_in_its_transaction_leaves_the_link_unused(
    store: Store, run: Run, make_approval: MakeApproval, clock: Clock
) -> None:
    late = make_approval(run.id, deadline=clock() + timedelta(minutes=1))
    await store.create_approval(late)
    clock.advance(minutes=2)
    with pytest.raises(errors.Expired):
        await store.cast_vote(
            late.id, Ruling(APPROVED, by="eve@x.com", at=clock()), open_only=True, link_nonce="n2"
        )
    assert await store.email_link_used("n2") is None
    assert (await store.get_approval(late.id)).state == ApprovalState.PENDING

    # decided by someone else first: refused, and the link is still unused
    other = make_approval(run.id)
    await store.create_approval(other)
    await store.cast_vote(other.id, Ruling(APPROVED, by="U0BOB", at=clock()))
    with pytest.raises(errors.AlreadyDecided):
        await store.cast_vote(
            other.id, Ruling(DECLINED, by="eve@x.com", at=clock()), link_nonce="n3"
        )
    assert await store.email_link_used("n3") is None


@pytest.mark.parametrize("quorum", [1, 2])
async def test_of_many_decisions_through_one_link_at_once_exactly_one_counts(
    store: Store, run: Run, make_approval: MakeApproval, clock: Clock, quorum: int
) -> None:
    approval = make_approval(run.id, required_approvals=quorum)
    await store.create_approval(approval)
    outcomes = await asyncio.gather(
        *(
            store.cast_vote(
                approval.id, Ruling(APPROVED, by="eve@x.com", at=clock()), link_nonce="n4"
            )
            for _ in range(12)
        ),
        return_exceptions=True,
    )
    counted = [o for o in outcomes if not isinstance(o, BaseException)]
    refused = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(counted) == 1, outcomes
    assert all(isinstance(o, errors.LinkUsed) for o in refused), refused
    assert await store.list_votes(approval.id) == (["eve@x.com"] if quorum > 1 else [])
    expected = APPROVED if quorum == 1 else ApprovalState.PENDING
    assert (await store.get_approval(approval.id)).state == expected
