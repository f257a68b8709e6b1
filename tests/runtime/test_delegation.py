"""Out of office: while a person is away, their delegate decides for them what names them
directly, recorded and audited as "carol for alice", on every backend; and the refusals: a
delegate's own request, a group-routed approval the delegate is not in, an absence that is
over or was ended, and bad input."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from bot.slack import cards
from examples.refund_agent import agent as refund_agent
from runtime import Actor
from runtime import Permission
from runtime import Policies
from runtime import Policy
from runtime import Runtime
from runtime import StaticDirectory
from runtime import errors
from store import Approval
from store import ApprovalState

REQUESTER, ALICE, CAROL, DAN = "U0REQ", "U0ALICE", "U0CAROL", "U0DAN"
DIRECT = Policies(tools={"issue_refund": Policy(approvers=(ALICE, "bob@example.com"))})
GROUP = Policies(tools={"issue_refund": Policy(approvers=("S0LEADS",))})
LEADS = StaticDirectory({"S0LEADS": {ALICE, DAN}})


async def _asked(rt: Runtime, by: str = REQUESTER, run_id: str = "r-1") -> Approval:
    run_id = await rt.start("refund-agent", "Refund order 4471", requested_by=by, run_id=run_id)
    (approval,) = await rt.approvals(run_id, state="pending")
    return approval


async def assert_refused(
    rt: Runtime,
    approval: Approval,
    by: str,
    refusal: type[Exception],
    decision: str = "approved",
    match: str | None = None,
) -> None:
    """`by` deciding `approval` is refused with `refusal`, and the approval stays pending."""
    with pytest.raises(refusal, match=match):
        await rt.decide(approval.id, decision, by=by, resume=False)
    assert (await rt.queries.approval(approval.id)).state == ApprovalState.PENDING


async def test_a_delegate_decides_for_the_away_person_and_the_record_says_so(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([refund_agent], policies=DIRECT)
    approval = await _asked(rt)
    with pytest.raises(errors.NotAnApprover):  # not before alice is away
        await rt.check_decider(approval, "approved", CAROL)

    away = await rt.set_away(ALICE, until=rt.clock() + timedelta(days=3), delegate=CAROL)
    assert (away.person, away.delegate) == (ALICE, CAROL)
    assert [a.person for a in await rt.away()] == [ALICE]
    await rt.check_decider(approval, "approved", CAROL)  # the page offers it to her now
    assert await rt.may(Actor.of_person(CAROL), Permission.DECIDE, approval)  # and Home

    decided = await rt.decide(approval.id, "approved", by=CAROL, resume=False)
    assert (decided.state, decided.decided_by, decided.decided_for) == (
        ApprovalState.APPROVED,
        CAROL,
        ALICE,
    )
    events = await rt.queries.audit(approval_id=approval.id)
    [event] = [e for e in events if e.action == "approval_approved"]
    assert (event.actor, event.detail["for"]) == (CAROL, ALICE)
    assert "<@U0CAROL> for <@U0ALICE>" in cards.outcome_line(decided)
    said = [e for e in await rt.queries.audit() if e.action == "away_set"]
    assert [(e.actor, e.detail["delegate"]) for e in said] == [(ALICE, CAROL)]


async def test_a_delegate_may_not_approve_their_own_request(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([refund_agent], policies=DIRECT)
    await rt.set_away(ALICE, until=rt.clock() + timedelta(days=1), delegate=CAROL)
    theirs = await _asked(rt, by=CAROL)
    await assert_refused(
        rt, theirs, CAROL, errors.SelfApproval, match="never approves their own request"
    )
    assert not await rt.may(Actor.of_person(CAROL), Permission.DECIDE, theirs)
    # nor may alice's delegate approve alice's own request for her
    await rt.set_away(ALICE, until=rt.clock() + timedelta(days=1), delegate=DAN)
    alices = await _asked(rt, by=ALICE, run_id="r-2")
    await assert_refused(rt, alices, DAN, errors.SelfApproval)


async def test_delegation_never_widens_a_policy_beyond_its_group(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([refund_agent], policies=GROUP, directory=LEADS)
    approval = await _asked(rt)
    await rt.set_away(ALICE, until=rt.clock() + timedelta(days=1), delegate=CAROL)
    await assert_refused(rt, approval, CAROL, errors.NotAnApprover)
    assert not await rt.may(Actor.of_person(CAROL), Permission.DECIDE, approval)
    # a delegate inside the group decides as themselves, for nobody
    await rt.set_away(ALICE, until=rt.clock() + timedelta(days=1), delegate=DAN)
    decided = await rt.decide(approval.id, "approved", by=DAN, resume=False)
    assert (decided.decided_by, decided.decided_for) == (DAN, None)


async def test_an_absence_that_is_over_or_ended_delegates_nothing(
    make_runtime: Callable[..., Runtime], world: Path, clock: Callable[[], object]
) -> None:
    rt = make_runtime([refund_agent], policies=DIRECT, clock=clock)
    approval = await _asked(rt)
    await rt.set_away(ALICE, until=rt.clock() + timedelta(hours=1), delegate=CAROL)
    clock.advance(hours=2)  # type: ignore[attr-defined]
    assert await rt.away() == []
    await assert_refused(rt, approval, CAROL, errors.NotAnApprover)
    await rt.set_away(ALICE, until=rt.clock() + timedelta(hours=1), delegate=CAROL)
    assert await rt.back(ALICE) is True
    assert await rt.back(ALICE) is False
    await assert_refused(rt, approval, CAROL, errors.NotAnApprover, "declined")


async def test_bad_absences_are_refused_and_change_nothing(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([refund_agent], policies=DIRECT)
    now = rt.clock()
    for person, until, delegate, why in [
        (ALICE, now + timedelta(days=1), ALICE, "own delegate"),
        (ALICE, now - timedelta(minutes=1), CAROL, "has passed"),
        (ALICE, now + timedelta(days=400), CAROL, "at most"),
        (ALICE, (now + timedelta(days=1)).replace(tzinfo=None), CAROL, "time zone"),
        ("", now + timedelta(days=1), CAROL, "needs the person"),
    ]:
        with pytest.raises(errors.InvalidRequest, match=why):
            await rt.set_away(person, until=until, delegate=delegate)
    assert await rt.away() == []
