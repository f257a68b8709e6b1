"""One job, long because the desk has many rules: approvals on the runtime side.

Approvals on the runtime side (issue 4; docs/architecture.md rules 4 and 9): the gate, decisions,
edits, declines, refusals that change nothing, quorum, audit, reminders and timeouts."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from approvals_conftest_helpers import APPROVER
from approvals_conftest_helpers import REQUESTER
from approvals_conftest_helpers import RecordingNotifier
from approvals_conftest_helpers import invocations
from approvals_conftest_helpers import tool_messages
from approvals_conftest_helpers import wire_agent
from support.refunds import park_refund

from examples import world as example_world
from examples.refund_agent import agent as refund_agent
from runtime import Policies
from runtime import Policy
from runtime import Runtime
from runtime import StaticDirectory
from runtime import errors
from runtime import tool_call
from store import Approval
from store import ApprovalState
from store import EffectStatus
from store import RunStatus
from store import Store
from store import errors as store_errors

WIRE = tool_call("wire_money", {"account": "ACME", "amount_cents": 500})

DECISIONS = ("approval_approved", "approval_declined")
"""Audit actions of a decision (the trail also has requests, executions, pages)."""


def wire_policies(policy: Policy) -> Policies:
    """The policies of a runtime whose one gated tool, `wire_money`, follows `policy`."""
    return Policies(tools={"wire_money": policy})


async def start_wire(
    rt: Runtime, *, run_id: str = "run-wire", requested_by: str = REQUESTER
) -> Approval:
    """Start the wire agent and return the approval its one call is parked on."""
    await rt.start("wire-agent", "Pay ACME", run_id=run_id, requested_by=requested_by)
    (approval,) = await rt.approvals(run_id)
    return approval


async def snapshot(store: Store, approval_id: str) -> tuple[Approval, list[Any], list[Any]]:
    """Everything a refused decision must leave as it was."""
    approval = await store.get_approval(approval_id)
    return approval, await store.list_events(), await store.list_effects(approval.run_id or "")


# the gate


async def test_call_needing_approval_parks_the_run_with_args_frozen(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    notifier = RecordingNotifier()
    rt = make_runtime([refund_agent], notifier=notifier)
    run_id = await rt.start("refund-agent", "Refund order 1001", requested_by=REQUESTER)

    run = await rt.get(run_id)
    assert run.status == RunStatus.WAITING_APPROVAL
    assert run.lease_owner is None
    assert run.lease_expires_at is None
    (approval,) = await rt.approvals(run_id)
    assert approval.state == ApprovalState.PENDING
    assert approval.tool == "issue_refund"
    assert approval.args == {"order_id": "1001", "amount_cents": 6033, "restocking_fee_cents": 500}
    assert approval.requested_by == REQUESTER
    assert approval.decided_by is None
    assert [a.id for a in notifier.requested] == [approval.id]
    assert example_world.payments() == []
    assert example_world.emails() == []
    effects = await rt.store.list_effects(run_id)
    assert [e.tool for e in effects] == ["lookup_order"]


async def test_approval_executes_the_call_once_and_the_run_finishes(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([refund_agent])
    run_id, approval = await park_refund(rt, "1001", requested_by=REQUESTER)

    decided = await rt.decide(approval.id, "approved", by=APPROVER)

    assert decided.state == ApprovalState.APPROVED
    assert decided.decided_by == APPROVER
    run = await rt.get(run_id)
    assert run.status == RunStatus.DONE
    refunds = [p for p in example_world.payments() if p[0] == "refund"]
    assert refunds == [("refund", "1001", 6033, approval.idempotency_key)]
    effect = await rt.store.get_effect(run_id, approval.call_id or "")
    assert effect.status == EffectStatus.COMPLETED
    assert effect.approval_id == approval.id
    await rt.recover()
    await rt.start("refund-agent", "Refund order 1001", run_id=run_id)
    assert [p for p in example_world.payments() if p[0] == "refund"] == refunds


async def test_edited_args_are_executed_and_all_three_versions_kept(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    policies = wire_policies(Policy(allow_edit=True))
    rt = make_runtime([wire_agent()], policies=policies)
    approval = await start_wire(rt)

    await rt.decide(
        approval.id, "approved", by=APPROVER, args={"account": "ACME", "amount_cents": "450"}
    )

    stored = await rt.store.get_approval(approval.id)
    assert stored.args == {"account": "ACME", "amount_cents": 500}
    assert stored.approved_args == {"account": "ACME", "amount_cents": 450}
    effect = await rt.store.get_effect("run-wire", approval.call_id or "")
    assert effect.args == {"account": "ACME", "amount_cents": 450}
    assert [(t, s, a) for t, s, a, _ in invocations()] == [("wire_money", "ACME", 450)]
    assert (await rt.get("run-wire")).status == RunStatus.DONE


@pytest.mark.parametrize(
    "args",
    [
        {"account": "ACME", "amount_cents": "lots"},
        {"account": "ACME"},
        {"account": "ACME", "amount_cents": 1, "memo": "extra"},
    ],
)
async def test_invalid_edit_is_refused_and_changes_nothing(
    make_runtime: Callable[..., Runtime], world: Path, args: dict[str, Any]
) -> None:
    policies = wire_policies(Policy(allow_edit=True))
    rt = make_runtime([wire_agent()], policies=policies)
    approval = await start_wire(rt)
    before = await snapshot(rt.store, approval.id)

    with pytest.raises(errors.EditRefused, match="wire_money"):
        await rt.decide(approval.id, "approved", by=APPROVER, args=args)

    assert await snapshot(rt.store, approval.id) == before
    assert invocations() == []
    assert (await rt.get("run-wire")).status == RunStatus.WAITING_APPROVAL


async def test_edit_is_refused_when_the_policy_forbids_it(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([wire_agent()])
    approval = await start_wire(rt)
    before = await snapshot(rt.store, approval.id)

    with pytest.raises(errors.EditRefused, match="does not allow"):
        await rt.decide(
            approval.id, "approved", by=APPROVER, args={"account": "EVIL", "amount_cents": 9}
        )

    assert await snapshot(rt.store, approval.id) == before
    assert invocations() == []


# declines


async def test_declined_call_is_not_executed_and_the_model_is_told(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([refund_agent])
    run_id, approval = await park_refund(rt, "1001", requested_by=REQUESTER)

    await rt.decide(approval.id, "declined", by=APPROVER, reason="customer already refunded")

    state = await rt.store.load_state(run_id)
    assert state.status == RunStatus.DONE
    (told,) = tool_messages(state.messages, approval.call_id or "")
    assert told["executed"] is False
    assert told["declined_by"] == APPROVER
    assert told["reason"] == "customer already refunded"
    assert "not retry" in told["instruction"]
    assert [p for p in example_world.payments() if p[0] == "refund"] == []
    with pytest.raises(store_errors.NotFound):
        await rt.store.get_effect(run_id, approval.call_id or "")


async def test_reissued_declined_call_gets_the_same_decline_without_asking_again(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    notifier = RecordingNotifier()
    rt = make_runtime([wire_agent([WIRE, WIRE, "gave up"])], notifier=notifier)
    approval = await start_wire(rt)

    await rt.decide(approval.id, "declined", by=APPROVER, reason="not this month")

    state = await rt.store.load_state("run-wire")
    assert state.status == RunStatus.DONE
    first, second = (
        tool_messages(state.messages, "call_1_1"),
        tool_messages(state.messages, "call_2_1"),
    )
    assert first == second
    assert second[0]["declined_by"] == APPROVER
    assert second[0]["approval_id"] == approval.id
    assert len(await rt.approvals("run-wire")) == 1
    assert len(notifier.requested) == 1
    assert invocations() == []


async def test_reissued_declined_call_in_a_fork_gets_the_same_decline(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([wire_agent([WIRE, WIRE, "gave up"])])
    approval = await start_wire(rt)
    await rt.decide(approval.id, "declined", by=APPROVER, reason="not this month")

    fork_id = await rt.fork("run-wire", from_step=0)

    fork = await rt.store.load_state(fork_id)
    assert fork.status == RunStatus.DONE
    (told,) = tool_messages(fork.messages, "call_1_1")
    assert told["executed"] is False
    assert told["approval_id"] == approval.id
    assert await rt.approvals(fork_id) == []
    assert invocations() == []


# refusals that change nothing


async def test_second_decision_is_refused(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([wire_agent()])
    approval = await start_wire(rt)
    await rt.decide(approval.id, "approved", by=APPROVER)
    before = await snapshot(rt.store, approval.id)

    with pytest.raises(errors.AlreadyDecided, match="already approved"):
        await rt.decide(approval.id, "declined", by=APPROVER, reason="changed my mind")
    with pytest.raises(errors.AlreadyDecided):
        await rt.decide(approval.id, "approved", by="U_SOMEONE")

    assert await snapshot(rt.store, approval.id) == before
    assert len(invocations()) == 1


APPROVERS = wire_policies(Policy(approvers=("U0BOSS", "S0FINANCE")))
FINANCE = StaticDirectory({"S0FINANCE": {"U0FIN1", "U0FIN2"}, "S0OTHER": {"U0STRANGER"}})
REQUESTER_APPROVES = wire_policies(Policy(approvers=("U0REQ", "U0BOSS")))


@pytest.mark.parametrize(
    ("policies", "by", "decision", "refusal"),
    [
        (APPROVERS, "U0STRANGER", "approved", errors.NotAnApprover),
        (APPROVERS, "U0STRANGER", "declined", errors.NotAnApprover),
        (REQUESTER_APPROVES, "U0REQ", "approved", errors.SelfApproval),
    ],
    ids=["stranger approves", "stranger declines", "requester approves own"],
)
async def test_a_decider_the_policy_forbids_is_refused_and_nothing_changes(
    make_runtime: Callable[..., Runtime],
    world: Path,
    policies: Policies,
    by: str,
    decision: str,
    refusal: type[Exception],
) -> None:
    rt = make_runtime([wire_agent()], policies=policies, directory=FINANCE)
    approval = await start_wire(rt, requested_by="U0REQ")
    before = await snapshot(rt.store, approval.id)

    with pytest.raises(refusal, match=by):
        await rt.decide(approval.id, decision, by=by)  # type: ignore[arg-type]

    assert await snapshot(rt.store, approval.id) == before
    assert invocations() == []
    assert (await rt.get("run-wire")).status == RunStatus.WAITING_APPROVAL


@pytest.mark.parametrize(
    ("policies", "by", "decision", "executed"),
    [
        (APPROVERS, "U0BOSS", "approved", 1),
        (APPROVERS, "U0FIN2", "declined", 0),
        (
            wire_policies(Policy(allow_self_approval=True)),
            REQUESTER,
            "approved",
            1,
        ),
    ],
    ids=["approver by user id", "member of an approver group", "self-approval allowed"],
)
async def test_a_decider_the_policy_allows_decides(
    make_runtime: Callable[..., Runtime],
    world: Path,
    policies: Policies,
    by: str,
    decision: str,
    executed: int,
) -> None:
    rt = make_runtime([wire_agent()], policies=policies, directory=FINANCE)
    approval = await start_wire(rt)

    decided = await rt.decide(approval.id, decision, by=by)  # type: ignore[arg-type]

    assert (decided.state.value, decided.decided_by) == (decision, by)
    assert len(invocations()) == executed


async def test_self_approval_is_refused_under_the_default_policy(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([refund_agent])
    _, approval = await park_refund(rt, "1001", requested_by=REQUESTER)

    with pytest.raises(errors.SelfApproval):
        await rt.decide(approval.id, "approved", by=REQUESTER)

    assert (await rt.store.get_approval(approval.id)).state == ApprovalState.PENDING
    assert example_world.payments() == []


async def test_unknown_approval_id_is_refused(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([wire_agent()])
    await start_wire(rt)
    events = await rt.store.list_events()

    with pytest.raises(errors.ApprovalNotFound, match="ap_nope"):
        await rt.decide("ap_nope", "approved", by=APPROVER)

    assert await rt.store.list_events() == events


@pytest.mark.parametrize("decision", ["approve", "APPROVED", "pending", ""])
async def test_bad_decision_string_is_refused(
    make_runtime: Callable[..., Runtime], world: Path, decision: str
) -> None:
    rt = make_runtime([wire_agent()])
    approval = await start_wire(rt)
    before = await snapshot(rt.store, approval.id)

    with pytest.raises(errors.InvalidRequest, match="'approved', 'declined' or 'asked'"):
        await rt.decide(approval.id, decision, by=APPROVER)  # type: ignore[arg-type]

    assert await snapshot(rt.store, approval.id) == before


async def test_decision_without_a_user_is_refused(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([wire_agent()])
    approval = await start_wire(rt)
    before = await snapshot(rt.store, approval.id)

    with pytest.raises(errors.InvalidRequest):
        await rt.decide(approval.id, "approved", by="")

    assert await snapshot(rt.store, approval.id) == before


# several calls in one reply


TWO_WIRES = [
    [
        tool_call("wire_money", {"account": "A", "amount_cents": 100}),
        tool_call("wire_money", {"account": "B", "amount_cents": 200}),
    ],
    "both handled",
]


async def test_each_call_in_one_reply_gets_its_own_approval(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([wire_agent(TWO_WIRES)])
    await rt.start("wire-agent", "Pay A and B", run_id="run-two", requested_by=REQUESTER)

    first, second = await rt.approvals("run-two")

    assert (first.call_id, first.args["account"]) == ("call_1_1", "A")
    assert (second.call_id, second.args["account"]) == ("call_1_2", "B")
    assert first.id != second.id
    assert {first.state, second.state} == {ApprovalState.PENDING}
    assert invocations() == []


async def test_run_resumes_only_when_every_call_is_decided(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([wire_agent(TWO_WIRES)])
    await rt.start("wire-agent", "Pay A and B", run_id="run-two", requested_by=REQUESTER)
    first, second = await rt.approvals("run-two")

    await rt.decide(second.id, "approved", by=APPROVER)

    assert invocations() == []
    state = await rt.store.load_state("run-two")
    assert state.status == RunStatus.WAITING_APPROVAL
    assert state.usage.steps == 1

    await rt.decide(first.id, "approved", by=APPROVER)

    assert [i[1] for i in invocations()] == ["A", "B"]
    state = await rt.store.load_state("run-two")
    assert state.status == RunStatus.DONE
    assert state.messages[-1].content == "both handled"
    effects = await rt.store.list_effects("run-two")
    assert [e.call_id for e in effects] == ["call_1_1", "call_1_2"]


async def test_mixed_decisions_in_one_reply_execute_only_the_approved_call(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([wire_agent(TWO_WIRES)])
    await rt.start("wire-agent", "Pay A and B", run_id="run-two", requested_by=REQUESTER)
    first, second = await rt.approvals("run-two")

    await rt.decide(first.id, "declined", by=APPROVER, reason="A is closed")
    assert (await rt.get("run-two")).status == RunStatus.WAITING_APPROVAL
    await rt.decide(second.id, "approved", by=APPROVER)

    assert [i[1] for i in invocations()] == ["B"]
    state = await rt.store.load_state("run-two")
    assert state.status == RunStatus.DONE
    assert tool_messages(state.messages, "call_1_1")[0]["reason"] == "A is closed"
    assert tool_messages(state.messages, "call_1_2")[0] == {"wired": 200, "to": "B"}


async def test_racing_decisions_settle_once(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([wire_agent()])
    approval = await start_wire(rt)

    outcomes = await asyncio.gather(
        rt.decide(approval.id, "approved", by="U0ALICE"),
        rt.decide(approval.id, "declined", by="U0BOB", reason="no"),
        return_exceptions=True,
    )

    won = [o for o in outcomes if not isinstance(o, BaseException)]
    lost = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(won) == 1
    assert [type(e) for e in lost] == [errors.AlreadyDecided]
    final = await rt.store.get_approval(approval.id)
    assert final == won[0]
    assert len(invocations()) == (1 if final.state == ApprovalState.APPROVED else 0)
    decisions = [e for e in await rt.store.list_events() if e.action in DECISIONS]
    assert [e.actor for e in decisions] == [final.decided_by]


# quorum


QUORUM = wire_policies(Policy(required_approvals=2, approvers=("U0ALICE", "U0BOB", "U0CAROL")))


async def test_one_approval_of_two_keeps_it_pending(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([wire_agent()], policies=QUORUM)
    approval = await start_wire(rt)

    after = await rt.decide(approval.id, "approved", by="U0ALICE")

    assert after.state == ApprovalState.PENDING
    assert (await rt.store.get_approval(approval.id)).state == ApprovalState.PENDING
    assert (await rt.get("run-wire")).status == RunStatus.WAITING_APPROVAL
    assert invocations() == []


@pytest.mark.parametrize(
    ("by", "decision", "state", "executed"),
    [
        ("U0BOB", "approved", ApprovalState.APPROVED, 1),
        ("U0CAROL", "declined", ApprovalState.DECLINED, 0),
    ],
    ids=["a second approver approves", "any decline declines"],
)
async def test_the_vote_after_the_first_decides_a_quorum(
    make_runtime: Callable[..., Runtime],
    world: Path,
    by: str,
    decision: str,
    state: str,
    executed: int,
) -> None:
    rt = make_runtime([wire_agent()], policies=QUORUM)
    approval = await start_wire(rt)

    await rt.decide(approval.id, "approved", by="U0ALICE")
    decided = await rt.decide(approval.id, decision, by=by)  # type: ignore[arg-type]

    assert (decided.state, decided.decided_by) == (state, by)
    assert len(invocations()) == executed
    assert (await rt.get("run-wire")).status == RunStatus.DONE
    (last,) = {"U0ALICE", "U0BOB", "U0CAROL"} - {"U0ALICE", by}
    with pytest.raises(errors.AlreadyDecided):  # decided: no more votes
        await rt.decide(approval.id, "approved", by=last)


@pytest.mark.parametrize(
    ("by", "refusal", "says"),
    [
        ("U0ALICE", errors.AlreadyVoted, r"U0ALICE already approved .* 1 more"),
        ("U0MALLORY", errors.NotAnApprover, "U0MALLORY"),
    ],
    ids=["the same approver twice", "a non-approver"],
)
async def test_a_vote_that_does_not_count_changes_nothing(
    make_runtime: Callable[..., Runtime],
    world: Path,
    by: str,
    refusal: type[Exception],
    says: str,
) -> None:
    rt = make_runtime([wire_agent()], policies=QUORUM)
    approval = await start_wire(rt)
    await rt.decide(approval.id, "approved", by="U0ALICE")
    events = await rt.store.list_events(run_id="run-wire")

    with pytest.raises(refusal, match=says):
        await rt.decide(approval.id, "approved", by=by)

    assert await rt.store.list_events(run_id="run-wire") == events
    assert await rt.store.list_votes(approval.id) == ["U0ALICE"]
    assert (await rt.store.get_approval(approval.id)).state == ApprovalState.PENDING
    assert invocations() == []


# audit


async def test_every_decision_is_audited_with_the_deciding_user(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([wire_agent()])
    approved = await start_wire(rt, run_id="run-1")
    declined = await start_wire(rt, run_id="run-2")

    await rt.decide(approved.id, "approved", by="U0ALICE")
    await rt.decide(declined.id, "declined", by="U0BOB", reason="duplicate")

    events = {e.approval_id: e for e in await rt.store.list_events() if e.action in DECISIONS}
    assert events[approved.id].action == "approval_approved"
    assert events[approved.id].actor == "U0ALICE"
    assert events[approved.id].run_id == "run-1"
    assert events[declined.id].action == "approval_declined"
    assert events[declined.id].actor == "U0BOB"
    assert events[declined.id].detail["reason"] == "duplicate"


async def test_twenty_votes_sent_at_once_by_one_person_count_once(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([wire_agent()], policies=QUORUM)
    approval = await start_wire(rt)

    tries = await asyncio.gather(
        *(rt.decide(approval.id, "approved", by="U0ALICE") for _ in range(20)),
        return_exceptions=True,
    )

    pending = [t for t in tries if not isinstance(t, BaseException)]
    refused = [t for t in tries if isinstance(t, errors.AlreadyVoted)]
    assert (len(pending), len(refused)) == (1, 19)
    votes = [e for e in await rt.store.list_events() if e.action == "vote"]
    assert [(e.actor, e.approval_id) for e in votes] == [("U0ALICE", approval.id)]
    assert (await rt.store.get_approval(approval.id)).state == ApprovalState.PENDING


async def test_twenty_people_voting_at_once_each_count_once(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    people = tuple(f"U0P{n:02d}" for n in range(20))
    policy = Policy(required_approvals=len(people), approvers=people)
    rt = make_runtime([wire_agent()], policies=wire_policies(policy))
    approval = await start_wire(rt)

    decided = await asyncio.gather(*(rt.decide(approval.id, "approved", by=u) for u in people))

    assert [d.state for d in decided].count(ApprovalState.APPROVED) == 1
    events = [e for e in await rt.store.list_events() if e.approval_id == approval.id]
    assert sorted(e.actor for e in events if e.action == "vote") == sorted(people)
    assert [e.action for e in events if e.action in DECISIONS] == ["approval_approved"]
    assert sorted(await rt.store.list_votes(approval.id)) == sorted(people)
    assert len(invocations()) == 1
    assert (await rt.get("run-wire")).status == RunStatus.DONE


async def test_quorum_votes_are_audited_with_each_voter(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([wire_agent()], policies=QUORUM)
    approval = await start_wire(rt)

    await rt.decide(approval.id, "approved", by="U0ALICE")
    await rt.decide(approval.id, "approved", by="U0BOB")

    actors = [
        (e.action, e.actor)
        for e in await rt.store.list_events()
        if e.approval_id == approval.id and e.action in {"vote", *DECISIONS}
    ]
    assert ("vote", "U0ALICE") in actors
    assert ("vote", "U0BOB") in actors
    assert actors[-1] == ("approval_approved", "U0BOB")


# reminders, escalation and timeouts (an injected clock, no sleeping)


TIMED = wire_policies(
    Policy(
        approvers=("U0BOSS",),
        remind_every="15m",
        max_reminders=2,
        escalate_to="S0ONCALL",
        timeout="2h",
    )
)
ONCALL = StaticDirectory({"S0ONCALL": {"U0ONCALL"}})


async def timed_wire(
    make_runtime: Callable[..., Runtime], clock: Any, policies: Policies = TIMED
) -> tuple[Runtime, RecordingNotifier, Approval]:
    """A wire run under timed policies, on call ONCALL, parked on its approval, and the
    notifier it tells."""
    notifier = RecordingNotifier()
    rt = make_runtime(
        [wire_agent()], policies=policies, directory=ONCALL, clock=clock, notifier=notifier
    )
    return rt, notifier, await start_wire(rt)


async def approved_wires_once(rt: Runtime, approval: Approval, by: str) -> Approval:
    """`by` approves the parked wire; it is approved, and the money goes out once."""
    decided = await rt.decide(approval.id, "approved", by=by)
    assert decided.state == ApprovalState.APPROVED
    assert len(invocations()) == 1
    return decided


async def test_reminders_come_at_the_right_times(
    make_runtime: Callable[..., Runtime], world: Path, clock: Any
) -> None:
    start = clock()
    rt, notifier, approval = await timed_wire(make_runtime, clock)
    assert approval.next_reminder_at == start + timedelta(minutes=15)
    assert approval.deadline == start + timedelta(hours=2)

    clock.advance(minutes=14, seconds=59)
    assert await rt.desk.tick(clock()) == start + timedelta(minutes=15)
    assert notifier.reminders == []

    clock.advance(seconds=1)
    assert await rt.desk.tick(clock()) == start + timedelta(minutes=30)
    assert [(a.reminders_sent, esc) for a, esc in notifier.reminders] == [(1, False)]

    clock.advance(minutes=15)
    await rt.desk.tick(clock())
    assert [(a.reminders_sent, esc) for a, esc in notifier.reminders] == [(1, False), (2, False)]
    assert (await rt.store.get_approval(approval.id)).escalated is False


async def test_escalation_after_max_reminders_admits_the_escalation_group(
    make_runtime: Callable[..., Runtime], world: Path, clock: Any
) -> None:
    rt, notifier, approval = await timed_wire(make_runtime, clock)
    for _ in range(2):
        clock.advance(minutes=15)
        await rt.desk.tick(clock())
    with pytest.raises(errors.NotAnApprover):
        await rt.decide(approval.id, "approved", by="U0ONCALL")

    clock.advance(minutes=15)
    await rt.desk.tick(clock())

    assert [esc for _, esc in notifier.reminders] == [False, False, True]
    stored = await rt.store.get_approval(approval.id)
    assert stored.escalated is True
    assert stored.state == ApprovalState.PENDING
    clock.advance(minutes=45)
    await rt.desk.tick(clock())
    assert len(notifier.reminders) == 3
    decided = await approved_wires_once(rt, approval, by="U0ONCALL")
    assert decided.decided_by == "U0ONCALL"


async def test_no_reminders_beyond_max_without_an_escalation_group(
    make_runtime: Callable[..., Runtime], world: Path, clock: Any
) -> None:
    policies = wire_policies(Policy(remind_every="10m", max_reminders=2))
    notifier = RecordingNotifier()
    rt = make_runtime([wire_agent()], policies=policies, clock=clock, notifier=notifier)
    approval = await start_wire(rt)

    for _ in range(6):
        clock.advance(minutes=10)
        await rt.desk.tick(clock())

    assert [(a.reminders_sent, esc) for a, esc in notifier.reminders] == [(1, False), (2, False)]
    assert (await rt.store.get_approval(approval.id)).state == ApprovalState.PENDING


async def test_timeout_declines_expired_and_the_model_is_told(
    make_runtime: Callable[..., Runtime], world: Path, clock: Any
) -> None:
    rt, notifier, approval = await timed_wire(make_runtime, clock)

    clock.advance(hours=1, minutes=59)
    await rt.desk.tick(clock())
    assert (await rt.store.get_approval(approval.id)).state == ApprovalState.PENDING
    clock.advance(minutes=1)
    await rt.desk.tick(clock())

    expired = await rt.store.get_approval(approval.id)
    assert expired.state == ApprovalState.DECLINED
    assert expired.reason == "expired"
    assert [a.id for a in notifier.decided] == [approval.id]
    state = await rt.store.load_state("run-wire")
    assert state.status == RunStatus.DONE
    (told,) = tool_messages(state.messages, approval.call_id or "")
    assert told["executed"] is False
    assert told["reason"] == "expired"
    assert invocations() == []
    with pytest.raises(errors.AlreadyDecided):
        await rt.decide(approval.id, "approved", by="U0BOSS")


async def tick_twice_at_once(rt: Runtime, clock: Any) -> None:
    """Two schedulers tick at the same moment, then one of them ticks again."""
    await asyncio.gather(rt.desk.tick(clock()), rt.desk.tick(clock()))
    await rt.desk.tick(clock())


async def test_timeout_that_fires_twice_acts_once(
    make_runtime: Callable[..., Runtime], world: Path, clock: Any
) -> None:
    rt, notifier, approval = await timed_wire(make_runtime, clock)
    clock.advance(hours=3)

    await tick_twice_at_once(rt, clock)

    decisions = [e for e in await rt.store.list_events() if e.action in DECISIONS]
    assert [(e.action, e.actor, e.detail["reason"]) for e in decisions] == [
        ("approval_declined", "signoff", "expired")
    ]
    assert len(notifier.decided) == 1
    assert len([r for r in notifier.finished if r.id == "run-wire"]) == 1
    state = await rt.store.load_state("run-wire")
    assert len(tool_messages(state.messages, approval.call_id or "")) == 1


async def test_reminder_that_fires_twice_is_sent_once(
    make_runtime: Callable[..., Runtime], world: Path, clock: Any
) -> None:
    rt, notifier, approval = await timed_wire(make_runtime, clock)
    clock.advance(minutes=15)

    await tick_twice_at_once(rt, clock)

    assert len(notifier.reminders) == 1
    assert (await rt.store.get_approval(approval.id)).reminders_sent == 1


ESCALATE_ON_TIMEOUT = wire_policies(
    Policy(approvers=("U0BOSS",), timeout="1h", on_timeout="escalate", escalate_to="S0ONCALL")
)


async def test_on_timeout_escalate_keeps_the_approval_pending(
    make_runtime: Callable[..., Runtime], world: Path, clock: Any
) -> None:
    rt, notifier, approval = await timed_wire(make_runtime, clock, ESCALATE_ON_TIMEOUT)

    clock.advance(hours=1)
    await rt.desk.tick(clock())
    await rt.desk.tick(clock())
    clock.advance(days=3)
    await rt.desk.tick(clock())

    stored = await rt.store.get_approval(approval.id)
    assert stored.state == ApprovalState.PENDING
    assert stored.escalated is True
    assert [esc for _, esc in notifier.reminders] == [True]
    assert (await rt.get("run-wire")).status == RunStatus.WAITING_APPROVAL
    assert invocations() == []
    await approved_wires_once(rt, approval, by="U0ONCALL")


async def test_escalated_by_reminders_the_timeout_does_not_escalate_again(
    make_runtime: Callable[..., Runtime], world: Path, clock: Any
) -> None:
    policies = wire_policies(
        Policy(
            approvers=("U0BOSS",),
            remind_every="10m",
            max_reminders=1,
            escalate_to="S0ONCALL",
            timeout="1h",
            on_timeout="escalate",
        )
    )
    rt, notifier, approval = await timed_wire(make_runtime, clock, policies)

    for _ in range(8):  # past the reminder, the escalation and the deadline
        clock.advance(minutes=10)
        await rt.desk.tick(clock())

    assert [esc for _, esc in notifier.reminders] == [False, True]
    stored = await rt.store.get_approval(approval.id)
    assert (stored.state, stored.escalated, stored.deadline) == (
        ApprovalState.PENDING,
        True,
        None,
    )


async def test_past_an_escalating_deadline_the_escalation_target_may_decide_unticked(
    make_runtime: Callable[..., Runtime], world: Path, clock: Any
) -> None:
    rt, _, approval = await timed_wire(make_runtime, clock, ESCALATE_ON_TIMEOUT)
    with pytest.raises(errors.NotAnApprover):
        await rt.decide(approval.id, "approved", by="U0ONCALL")  # not yet escalated

    clock.advance(hours=2)  # no scheduler ticked: the server was down
    await approved_wires_once(rt, approval, by="U0ONCALL")


async def test_decision_racing_the_timeout_settles_once(
    make_runtime: Callable[..., Runtime], world: Path, clock: Any
) -> None:
    rt, _, approval = await timed_wire(make_runtime, clock)
    clock.advance(hours=2)

    outcomes = await asyncio.gather(
        rt.desk.tick(clock()),
        rt.decide(approval.id, "approved", by="U0BOSS"),
        return_exceptions=True,
    )

    assert all(
        not isinstance(o, BaseException) or isinstance(o, errors.AlreadyDecided) for o in outcomes
    )
    final = await rt.store.get_approval(approval.id)
    assert final.state != ApprovalState.PENDING
    assert len(invocations()) == (1 if final.state == ApprovalState.APPROVED else 0)
    assert (await rt.get("run-wire")).status == RunStatus.DONE


async def test_decided_approval_gets_no_reminders_and_never_expires(
    make_runtime: Callable[..., Runtime], world: Path, clock: Any
) -> None:
    rt, notifier, approval = await timed_wire(make_runtime, clock)
    await rt.decide(approval.id, "approved", by="U0BOSS")

    for _ in range(12):
        clock.advance(minutes=15)
        assert await rt.desk.tick(clock()) is None

    assert notifier.reminders == []
    assert (await rt.store.get_approval(approval.id)).state == ApprovalState.APPROVED
    assert len(invocations()) == 1


async def test_escalation_widens_an_open_policy_and_never_narrows_it(
    make_runtime: Callable[..., Runtime], world: Path, clock: Any
) -> None:
    policies = wire_policies(Policy(remind_every="15m", max_reminders=1, escalate_to="S0ONCALL"))
    rt, _, approval = await timed_wire(make_runtime, clock, policies)
    for _ in range(2):
        clock.advance(minutes=15)
        await rt.desk.tick(clock())
    assert (await rt.store.get_approval(approval.id)).escalated is True

    decided = await approved_wires_once(rt, approval, by=APPROVER)

    assert decided.decided_by == APPROVER


# crashes between a decision and the resumed run


class ProcessDied(Exception):
    """Stands for the process dying right after the decision was committed."""


async def test_decision_survives_a_crash_before_the_run_resumes(
    file_store: Store, world: Path
) -> None:
    rt = Runtime(file_store, [wire_agent()], worker_id="approvals-worker")
    approval = await start_wire(rt)

    async def crash(run_id: str) -> None:
        raise ProcessDied("the process died after committing the decision")

    rt.resume_after_decision = crash  # type: ignore[method-assign]
    with pytest.raises(ProcessDied):
        await rt.decide(approval.id, "approved", by=APPROVER)
    assert invocations() == []

    restarted = Runtime(file_store, [wire_agent()], worker_id="approvals-worker")
    assert await restarted.recover() == ["run-wire"]
    assert await restarted.recover() == []

    assert len(invocations()) == 1
    assert (await restarted.get("run-wire")).status == RunStatus.DONE


async def test_quorum_votes_survive_a_restart(file_store: Store, world: Path) -> None:
    rt = Runtime(file_store, [wire_agent()], policies=QUORUM, worker_id="approvals-worker")
    approval = await start_wire(rt)
    await rt.decide(approval.id, "approved", by="U0ALICE")

    restarted = Runtime(file_store, [wire_agent()], policies=QUORUM, worker_id="other-worker")
    await restarted.recover()
    assert invocations() == []
    with pytest.raises(errors.AlreadyVoted):  # her vote from before the restart counts
        await restarted.decide(approval.id, "approved", by="U0ALICE")
    assert invocations() == []
    await approved_wires_once(restarted, approval, by="U0BOB")
