"""An approval carries its authority: who decides it is fixed when it is asked, and every
runtime that decides it (another process, with other policies) judges by that record, on
every backend. Approvals from before the record existed get it filled in once, from the
policy in force, audited."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from examples.refund_agent import agent as refund_agent
from runtime import Policies
from runtime import Policy
from runtime import Runtime
from runtime import errors
from store import Approval
from store import ApprovalState
from store import Store

REQUESTER, ALICE, BOB = "U0REQ", "U0ALICE", "U0BOB"
ONLY_ALICE = Policies(tools={"issue_refund": Policy(approvers=(ALICE,), allow_edit=True)})
ONLY_BOB = Policies(tools={"issue_refund": Policy(approvers=(BOB, "S0LEADS"), timeout=3600)})


async def _asked(rt: Runtime) -> Approval:
    run_id = await rt.start("refund-agent", "Refund order 4471", requested_by=REQUESTER)
    (approval,) = await rt.approvals(run_id, state="pending")
    return approval


async def test_the_asking_runtimes_approvers_decide_whatever_the_deciding_one_says(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    asking = make_runtime([refund_agent], policies=ONLY_ALICE, config_digest="sha256:aaa")
    deciding = make_runtime([refund_agent], policies=ONLY_BOB, config_digest="sha256:bbb")
    approval = await _asked(asking)

    authority = approval.authority
    assert authority is not None
    assert (authority.policy, authority.config_digest, authority.filled) == (
        "issue_refund",
        "sha256:aaa",
        False,
    )
    assert authority.settings["approvers"] == [ALICE]
    assert authority.digest.startswith("sha256:")

    with pytest.raises(errors.NotAnApprover):
        await deciding.decide(approval.id, "approved", by=BOB, resume=False)
    assert (await deciding.queries.approval(approval.id)).state == ApprovalState.PENDING
    # its own file's deadline never reached the approval either: A's policy has none
    assert approval.deadline is None
    decided = await deciding.decide(approval.id, "approved", by=ALICE, resume=False)
    assert (decided.state, decided.decided_by) == (ApprovalState.APPROVED, ALICE)


async def test_the_view_names_who_may_decide(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([refund_agent], policies=ONLY_BOB, config_digest="sha256:bbb")
    view = Runtime.authority(await _asked(rt))
    assert view is not None
    assert (view["approvers"], view["groups"], view["anyone"]) == ([BOB], ["S0LEADS"], False)
    assert (view["required_approvals"], view["allow_self_approval"]) == (1, False)
    assert view["deadline"] is not None
    assert view["on_timeout"] == "decline"


async def _from_before(store: Store, rt: Runtime) -> None:
    """`ap_older`: a pending approval as a version before the record wrote it (none)."""
    approval = await _asked(rt)
    older = approval.model_copy(update={"id": "ap_older", "authority": None, "call_id": None})
    await store.create_approval(older)
    assert (await store.get_approval("ap_older")).authority is None


async def test_pending_approvals_from_before_get_the_policy_in_force_once_audited(
    store: Store, make_runtime: Callable[..., Runtime], world: Path
) -> None:
    await _from_before(store, make_runtime([refund_agent], policies=ONLY_ALICE))

    filling = make_runtime([refund_agent], policies=ONLY_BOB, config_digest="sha256:bbb")
    assert await filling.fill_authority() == 1
    assert await make_runtime([refund_agent], policies=ONLY_ALICE).fill_authority() == 0
    filled = await store.get_approval("ap_older")
    assert filled.authority is not None
    assert filled.authority.filled
    assert filled.authority.settings["approvers"] == [BOB, "S0LEADS"]
    events = [e for e in await store.list_events() if e.action == "authority_filled"]
    assert [(e.approval_id, e.detail["policy"]) for e in events] == [("ap_older", "issue_refund")]

    # from then on the file that filled it decides it, in every runtime
    alice_side = make_runtime([refund_agent], policies=ONLY_ALICE)
    with pytest.raises(errors.NotAnApprover):
        await alice_side.decide("ap_older", "approved", by=ALICE, resume=False)


async def test_a_decision_on_an_approval_without_a_record_fills_it_first(
    store: Store, make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([refund_agent], policies=ONLY_ALICE)
    await _from_before(store, rt)

    with pytest.raises(errors.NotAnApprover):
        await rt.decide("ap_older", "approved", by=BOB, resume=False)
    recorded = (await store.get_approval("ap_older")).authority
    assert recorded is not None
    assert recorded.filled
    assert recorded.settings["approvers"] == [ALICE]
