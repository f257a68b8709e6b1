"""Reminders, escalations and timeouts on the real APScheduler, with a real clock.

Policies use fractions of a second; timing assertions keep generous margins, since other test
suites may share the machine.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from support.helpers import Recorder
from support.helpers import eventually

from examples import world
from runtime import Policies
from runtime import Policy
from runtime import Runtime
from runtime import StaticDirectory
from runtime import errors
from runtime.scheduler import Scheduler
from store import Approval
from store import ApprovalState
from store import RunStatus
from store import Store
from store import open_store
from store.records import utcnow

LATE = 2.0  # how late a timer may fire on a busy machine, in seconds
LEADS = StaticDirectory({"S0LEADS": {"U0LEAD"}})


@pytest.fixture
async def scheduled(
    make_runtime: Callable[..., Runtime],
) -> AsyncIterator[Callable[..., Any]]:
    """Make a Runtime under a default policy, with a Recorder and a started scheduler."""
    schedulers: list[Scheduler] = []

    async def make(**policy: Any) -> tuple[Runtime, Recorder]:
        recorder = Recorder()
        rt = make_runtime(
            notifier=recorder,
            policies=Policies(default=Policy(approvers=("U0BOSS",), **policy)),
            directory=LEADS,
        )
        scheduler = rt.scheduler
        await scheduler.start()
        schedulers.append(scheduler)
        return rt, recorder

    yield make
    for scheduler in schedulers:
        await scheduler.stop()


async def park(rt: Runtime, run_id: str = "order-4471") -> Approval:
    await rt.start("refund-agent", "Refund order 4471", run_id=run_id)
    [approval] = await rt.approvals(run_id)
    assert approval.state == ApprovalState.PENDING
    return approval


def refunds() -> list[Any]:
    return [p for p in world.payments() if p[0] == "refund"]


async def test_reminder_arrives_about_on_time(scheduled: Callable[..., Any]) -> None:
    rt, recorder = await scheduled(remind_every=0.4, max_reminders=2)
    approval = await park(rt)
    await eventually(lambda: _count(recorder, "reminder", 2), within=5)
    first, second = recorder.of("reminder")
    due = approval.created_at + timedelta(seconds=0.4)
    assert due <= first.wall <= due + timedelta(seconds=LATE)
    assert 0.25 <= second.at - first.at <= 0.4 + LATE
    assert first.approval is not None
    assert first.approval.reminders_sent == 1
    assert not first.escalated
    await asyncio.sleep(0.8)
    assert len(recorder.of("reminder")) == 2  # max_reminders
    reminded = await rt.desk.get(approval.id)
    assert reminded.reminders_sent == 2
    assert reminded.next_reminder_at is None
    assert reminded.state == ApprovalState.PENDING


async def test_reminders_escalate_after_max_reminders(scheduled: Callable[..., Any]) -> None:
    rt, recorder = await scheduled(remind_every=0.3, max_reminders=1, escalate_to="S0LEADS")
    approval = await park(rt)
    with pytest.raises(errors.NotAnApprover):
        await rt.decide(approval.id, "approved", by="U0LEAD")
    await eventually(lambda: _count(recorder, "reminder", 2), within=5)
    assert [r.escalated for r in recorder.of("reminder")] == [False, True]
    await rt.decide(approval.id, "approved", by="U0LEAD")
    assert (await rt.get("order-4471")).status == RunStatus.DONE
    assert len(refunds()) == 1


async def test_timeout_declines_expired_and_the_run_is_told(
    scheduled: Callable[..., Any], store: Store
) -> None:
    rt, recorder = await scheduled(timeout=0.5)
    approval = await park(rt)
    assert approval.deadline is not None

    async def finished() -> bool:
        return (await rt.get("order-4471")).status == RunStatus.DONE

    await eventually(finished, within=0.5 + LATE + 3)
    expired = await rt.desk.get(approval.id)
    assert expired.state == ApprovalState.DECLINED
    assert expired.reason == "expired"
    assert expired.decided_by == "signoff"
    assert expired.decided_at is not None
    assert approval.deadline <= expired.decided_at <= approval.deadline + timedelta(seconds=LATE)
    assert refunds() == []
    state = await store.load_state("order-4471")
    [told] = [m for m in state.messages if m.role == "tool" and m.name == "issue_refund"]
    assert "expired" in told.content
    assert "not" in told.content.lower()
    [(_, subject, _)] = world.emails()
    assert subject.startswith("About your refund request")
    assert [d.approval.id for d in recorder.of("decided") if d.approval] == [approval.id]


async def test_timeout_with_escalate_keeps_it_pending_and_escalated(
    scheduled: Callable[..., Any],
) -> None:
    rt, recorder = await scheduled(timeout=0.3, on_timeout="escalate", escalate_to="S0LEADS")
    approval = await park(rt)
    await eventually(lambda: _count(recorder, "reminder", 1), within=0.3 + LATE)
    [escalation] = recorder.of("reminder")
    assert escalation.escalated
    await asyncio.sleep(0.6)
    still = await rt.desk.get(approval.id)
    assert still.state == ApprovalState.PENDING
    assert still.escalated
    assert still.deadline is None
    assert (await rt.get("order-4471")).status == RunStatus.WAITING_APPROVAL
    assert refunds() == []
    await rt.decide(approval.id, "approved", by="U0LEAD")
    assert len(refunds()) == 1


async def test_reminders_escalation_and_expiry_each_leave_one_info_line(
    scheduled: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="signoff")
    rt, recorder = await scheduled(
        remind_every=0.2, max_reminders=1, escalate_to="S0LEADS", timeout=1.0
    )
    approval = await park(rt)

    async def finished() -> bool:
        return (await rt.get("order-4471")).status == RunStatus.DONE

    await eventually(finished, within=1.0 + LATE + 3)
    about = f"approval {approval.id} (issue_refund, run order-4471)"
    assert [r.getMessage() for r in caplog.records if r.name == "signoff.approvals"] == [
        f"{about}: reminder 1 sent",
        f"{about}: escalated to S0LEADS after 1 reminder(s)",
        f"{about} expired at its deadline: declined",
    ]
    assert all(r.levelno == logging.INFO for r in caplog.records if r.name.startswith("signoff"))
    assert len(recorder.of("reminder")) == 2


async def test_an_escalating_deadline_leaves_one_info_line(
    scheduled: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="signoff")
    rt, recorder = await scheduled(timeout=0.3, on_timeout="escalate", escalate_to="S0LEADS")
    approval = await park(rt)
    await eventually(lambda: _count(recorder, "reminder", 1), within=0.3 + LATE)
    await asyncio.sleep(0.3)
    assert [r.getMessage() for r in caplog.records if r.name == "signoff.approvals"] == [
        f"approval {approval.id} (issue_refund, run order-4471): deadline passed; "
        "escalated to S0LEADS, still waiting"
    ]


async def test_decision_before_the_deadline_is_not_undone_by_the_timer(
    scheduled: Callable[..., Any],
) -> None:
    rt, recorder = await scheduled(timeout=0.4, remind_every=0.2, max_reminders=5)
    approval = await park(rt)
    await rt.decide(approval.id, "approved", by="U0BOSS")
    await asyncio.sleep(0.8)
    decided = await rt.desk.get(approval.id)
    assert decided.state == ApprovalState.APPROVED
    assert decided.decided_by == "U0BOSS"
    assert recorder.of("reminder") == []
    assert len(recorder.of("decided")) == 1
    assert len(refunds()) == 1


async def test_two_processes_expire_each_approval_once(db_url: str) -> None:
    policies = Policies(default=Policy(timeout=0.4))
    stores = [await open_store(db_url), await open_store(db_url)]
    recorders = [Recorder(), Recorder()]
    runtimes = [
        Runtime(s, [], r, policies=policies, worker_id=f"w{i}")
        for i, (s, r) in enumerate(zip(stores, recorders, strict=True))
    ]
    schedulers = [rt.scheduler for rt in runtimes]
    try:
        for scheduler in schedulers:
            await scheduler.start()
        created = [(await runtimes[i % 2].request_approval("x", {"n": i}))[0] for i in range(20)]
        await asyncio.sleep(0.4)
        await asyncio.gather(*(s.tick() for s in schedulers))  # both fire at once, again

        async def all_expired() -> bool:
            found = [await stores[0].get_approval(a.id) for a in created]
            return all(a.state == ApprovalState.DECLINED for a in found)

        await eventually(all_expired, within=LATE + 2)
        decided = [d.approval.id for r in recorders for d in r.of("decided") if d.approval]
        assert sorted(decided) == sorted(a.id for a in created)
        events = await stores[0].list_events()
        assert len([e for e in events if e.action == "approval_declined"]) == 20
    finally:
        for scheduler in schedulers:
            await scheduler.stop()
        for s in stores:
            await s.close()


async def _count(recorder: Recorder, what: str, n: int) -> bool:
    return len(recorder.of(what)) >= n


# restart with 1,000 pending approvals

OVERDUE = 25
TOTAL = 1_000
SPREAD = 2.0  # seconds over which the other deadlines fall, after the restart


async def test_restart_rearms_1000_pending_deadlines(db_url: str) -> None:
    policies = Policies(default=Policy(timeout=timedelta(hours=1)))

    # the first process creates them, then goes away
    first = await open_store(db_url, synchronous="NORMAL")
    rt = Runtime(first, [], policies=policies, worker_id="first")
    now = utcnow()
    lead = timedelta(seconds=1.5)  # time for the restart before the first future deadline
    later = TOTAL - OVERDUE
    deadlines = [now - timedelta(seconds=60 - i) for i in range(OVERDUE)] + [
        now + lead + timedelta(seconds=SPREAD * i / later) for i in range(later)
    ]
    approvals = [
        rt.desk.new_approval(tool="x", args={"n": i}).model_copy(update={"deadline": deadline})
        for i, deadline in enumerate(deadlines)
    ]
    await asyncio.gather(*(first.create_approval(a) for a in approvals))
    await first.close()
    by_id = {a.id: a.deadline for a in approvals}
    overdue = {a.id for a in approvals[:OVERDUE]}

    # the second process: a new connection, a new runtime, a new scheduler
    second = await open_store(db_url)
    rt2 = Runtime(second, [], policies=policies, worker_id="second")
    scheduler = rt2.scheduler
    started = time.monotonic()
    try:
        await scheduler.start()
        seen: dict[str, Any] = {}

        async def sweep() -> bool:
            found = await second.list_approvals(run_id=None, state=None)
            checked_at = utcnow()
            for approval in found:
                if approval.state == ApprovalState.PENDING:
                    continue
                if approval.id not in seen:
                    seen[approval.id] = approval
                    assert by_id[approval.id] <= checked_at, "expired before its deadline"
            return len(seen) == TOTAL

        await sweep()
        assert time.monotonic() - started < 1.0 + LATE
        assert overdue <= set(seen), "deadlines that passed during the downtime fire at start"
        await eventually(sweep, within=lead.total_seconds() + SPREAD + LATE + 4, every=0.1)
    finally:
        await scheduler.stop()
        await second.close()
    for approval in seen.values():
        deadline = by_id[approval.id]
        assert approval.state == ApprovalState.DECLINED
        assert approval.reason == "expired"
        assert deadline <= approval.decided_at
        if approval.id not in overdue:
            assert approval.decided_at - deadline <= timedelta(seconds=LATE + 1)


async def test_periodic_jobs_are_awaited_whatever_callable_returns_the_coroutine(
    make_runtime: Callable[..., Runtime],
) -> None:
    scheduler = make_runtime().scheduler
    ran: list[str] = []

    async def job(name: str) -> None:
        ran.append(name)

    await scheduler.start()
    try:
        scheduler.every(0.1, lambda: job("lambda"), name="by-lambda")
        scheduler.every(0.1, lambda: job("other"), name="another")

        async def both_ran() -> bool:
            return {"lambda", "other"} <= set(ran)

        await eventually(both_ran, within=LATE + 2)
    finally:
        await scheduler.stop()
