"""A whole day of timers on the runtime's one scheduler and one clock, moved by hand: an
approval's hourly reminders, its escalation and its expiry, a page's reminders until someone
acknowledges it, and an outbox row whose delivery fails four times with backoff. Each
happens at its simulated time, exactly once, in well under a second of wall time."""

from __future__ import annotations

import math
import time
from datetime import UTC
from datetime import datetime
from datetime import timedelta

import pytest
from approvals_conftest_helpers import REQUESTER
from approvals_conftest_helpers import wire_agent

from bot.outbox import Attempt
from bot.outbox import OutboxNudge
from bot.outbox import OutboxSender
from bot.slack.page_reminders import PageReminders
from runtime import Policies
from runtime import Policy
from runtime import Runtime
from runtime.scheduler import Scheduler
from store import ApprovalState
from store import Batch
from store import Delivery
from store import Page
from store import RunStatus
from store import Store
from tests.conftest import Clock

HOUR = 3600.0
DAY = 24 * HOUR
FAILURES = 4
POLICIES = Policies(
    tools={
        "wire_money": Policy(
            approvers=("U0APPROVER",),
            remind_every="1h",
            max_reminders=3,
            escalate_to="U0ONCALL",
            timeout="8h",
        )
    }
)


@pytest.fixture
def clock() -> Clock:
    """Starts a little ahead of the real time: rows the database's triggers date by its own
    clock are then never in this clock's future."""
    return Clock(datetime.fromtimestamp(math.ceil(time.time()) + 5, UTC))


class Slack:
    """Stands in for the Slack delivery: records when (by the clock) each row went out,
    fails the approval's card the first FAILURES times, and posts pages so they are due
    reminders."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store, self.clock = store, clock
        self.start = clock()
        self.tries: list[tuple[str, float]] = []
        self.sent: list[tuple[str, float]] = []

    def at(self) -> float:
        return (self.clock() - self.start).total_seconds()

    async def __call__(self, attempt: Attempt) -> None:
        topic = attempt.item.topic
        self.tries.append((topic, self.at()))
        if topic == "approval_requested" and len(self.tries_of(topic)) <= FAILURES:
            raise ConnectionError("Slack is down")
        if topic == "page_opened":
            page_id = attempt.item.subject_id
            await self.store.set_page_message(
                page_id, channel="C0ONCALL", ts="1.000001", delivery=Delivery.DELIVERED
            )
        self.sent.append((topic, self.at()))

    def tries_of(self, topic: str) -> list[float]:
        return [at for t, at in self.tries if t == topic]

    def sent_of(self, topic: str) -> list[float]:
        return [at for t, at in self.sent if t == topic]


async def live_through(scheduler: Scheduler, sender: OutboxSender, clock: Clock, end: float) -> int:
    """Move the clock from one due job to the next until `end` seconds have passed, firing
    what is due and letting the sends it starts finish before time moves on."""
    until = clock() + timedelta(seconds=end)
    steps = 0
    while True:
        await scheduler.run_due()
        await sender.drain()
        due = scheduler.next_due_at()
        if due is None or due > until:
            clock.now = until
            return steps
        clock.now = max(clock.now, due)
        steps += 1


async def test_a_day_of_reminders_escalations_expiries_and_retries_in_no_time(
    store: Store, clock: Clock
) -> None:
    nudge = OutboxNudge()  # what `serve` tells the runtime: every change wakes the sender
    rt = Runtime(store, [wire_agent()], nudge, policies=POLICIES, clock=clock, worker_id="w-day")
    slack = Slack(store, clock)
    sender = OutboxSender(
        rt.deliveries, slack, owner="w-day", timers=rt.scheduler, poll_every=HOUR, jitter=max
    )
    nudge.sender = sender
    pages = PageReminders(
        rt.deliveries, timedelta(hours=2), rt.scheduler, sender.wake, check_every=HOUR / 2
    )
    run_id = await rt.start("wire-agent", "Pay ACME", run_id="run-day", requested_by=REQUESTER)
    page = Page(id="page-day", reason="in doubt", run_id=run_id, tool="wire_money")
    await store.commit(Batch(run_id=run_id, pages=[page]))

    async def acknowledge() -> None:
        await rt.acknowledge_page(page.id, by="U0OPS")

    rt.scheduler.poll_every = HOUR
    started = time.perf_counter()
    await rt.scheduler.start(paused=True)  # APScheduler holds the jobs; the clock moves them
    sender.start()
    pages.start()
    rt.scheduler.at(clock() + timedelta(hours=9), acknowledge, name="someone-acknowledges")
    try:
        steps = await live_through(rt.scheduler, sender, clock, DAY)
        wall = time.perf_counter() - started
        jobs = rt.scheduler.job_names
    finally:
        await sender.stop()
        pages.stop()
        await rt.scheduler.stop()

    # the card: four failures, backing off 1, 2, 4, 8 s, then delivered once
    assert slack.tries_of("approval_requested") == [0, 1, 3, 7, 15]
    assert slack.sent_of("approval_requested") == [15]
    # reminders every hour, the escalation after three, the expiry at eight hours
    assert slack.sent_of("approval_reminded") == [HOUR, 2 * HOUR, 3 * HOUR, 4 * HOUR]
    assert slack.sent_of("approval_decided") == [8 * HOUR]
    (approval,) = await rt.approvals(run_id)
    assert approval.state == ApprovalState.DECLINED
    assert approval.reason == "expired"
    assert approval.decided_at == slack.start + timedelta(hours=8)
    assert (approval.reminders_sent, approval.escalated) == (4, True)
    assert (await rt.get(run_id)).status == RunStatus.DONE
    assert slack.sent_of("run_finished") == [8 * HOUR]
    # the page: posted at once, reminded every two hours until acknowledged at nine
    assert slack.sent_of("page_opened") == [0]
    assert slack.sent_of("page_reminded") == [2 * HOUR, 4 * HOUR, 6 * HOUR, 8 * HOUR]
    # nothing nudges the sender after an acknowledgement: its next poll takes the row (every
    # hour here, every second in `serve`)
    assert slack.sent_of("page_acknowledged") == [10 * HOUR]
    assert len(slack.sent) == 13  # each of the above exactly once, nothing else
    assert (await store.outbox_backlog())[0] == 0
    # all of it on the runtime's one APScheduler, and in no time
    assert {"signoff-poll", "signoff-outbox-poll", "signoff-page-reminders"} <= jobs
    assert steps < 200
    # Nothing waited in real time: the day is the fake clock's (measured alone: 0.4 s on SQLite,
    # 0.8 s on PostgreSQL); the bound leaves room for a loaded machine, not for a real sleep.
    assert wall < 5.0, f"a simulated day took {wall:.2f} s of wall time"
