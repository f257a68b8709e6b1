"""The outbox sender: delivers the rows the database wrote with each change, with backoff.

A run never waits for it: the runtime only nudges it. Its timers (the poll, each row's next
try) run on the runtime's scheduler and read the runtime's clock. Rows are claimed for a
while, so two
processes never send one row at once, and a row whose sender died is claimed again once its
claim lapses. Rows go out concurrently (at most `concurrency` at once), each in its own task
with its own deadline inside its claim (`Timing`), and a freed slot is filled at once: one
hung request never holds up the other cards. A failed row is retried later with capped,
jittered backoff (the web client has already retried rate limits in place); a row that can
never succeed (an unknown channel, say) is given up with its reason, so it does not hold
back the rows of its subject behind it.

Every channel sends through it (Slack's cards, the e-mails), so it belongs to no surface.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable
from collections.abc import Callable
from dataclasses import KW_ONLY
from dataclasses import dataclass
from dataclasses import field
from datetime import timedelta

from runtime.deliveries import Deliveries
from runtime.records import Approval
from runtime.records import OutboxItem
from runtime.records import Page
from runtime.records import Run
from runtime.scheduler import Timers

log = logging.getLogger("signoff.outbox")

CLAIM_FOR = timedelta(seconds=60)
POLL_EVERY = 1.0
MAX_BACKOFF = 300.0
TURN_WAIT = 0.5  # seconds a row waiting for earlier rows of its subjects waits again


class Undeliverable(Exception):
    """Retrying this row cannot help (the message itself is invalid); give it up."""


class Misconfigured(Exception):
    """A person must fix something (a channel, a token, an invitation): keep the row, retry
    every minute at most, and say so at WARNING so it is seen."""


class WaitsItsTurn(Exception):
    """The row must wait for earlier rows about the same things; try again shortly."""


class RetryAt(Exception):
    """Try the row again `after` seconds from now, not counted as a failure: an earlier try's
    outcome is not known yet (Slack may still be carrying it out), or the claim is too far
    gone to post."""

    def __init__(self, after: float, why: str) -> None:
        super().__init__(why)
        self.after = after


@dataclass(frozen=True)
class Timing:
    """How long a post may take, all derived from the claim so that they fit together:

    - a post starts only in the first quarter of its claim (`start_by`) and is given up
      after a third of it (`post_timeout`): the claim outlives the longest post by a margin;
    - Slack is taken to have finished (or dropped) a request three quarters of a claim after
      it began (`settle`): an unknown outcome is looked up no earlier. A sender killed
      mid-post started it before `start_by`, and the next claim comes after the claim
      lapses, so even then the lookup comes after `settle`.
    """

    claim: float = CLAIM_FOR.total_seconds()

    @property
    def start_by(self) -> float:
        return self.claim / 4

    @property
    def post_timeout(self) -> float:
        return max(0.5, self.claim / 3)

    @property
    def settle(self) -> float:
        return self.claim * 3 / 4


@dataclass(frozen=True)
class Attempt:
    """One claim of one row: what the delivery may still do in it."""

    item: OutboxItem
    timing: Timing
    claimed_at: float = field(default_factory=time.monotonic)
    """Monotonic time taken before the claim was asked for (so never later than the claim):
    the budget bounds real requests to Slack, so it counts real seconds."""

    def elapsed(self) -> float:
        return time.monotonic() - self.claimed_at

    def may_start_post(self) -> bool:
        return self.elapsed() <= self.timing.start_by

    def post_budget(self) -> float:
        """Seconds a post started now may take: its timeout, never past the claim."""
        return max(0.0, min(self.timing.post_timeout, self.timing.claim * 7 / 12 - self.elapsed()))

    def remaining(self) -> float:
        return self.timing.claim - self.elapsed()


Deliver = Callable[[Attempt], Awaitable[None]]
POLL_JOB = "signoff-outbox-poll"
RETRY_JOB = "signoff-outbox-retry-{}"


@dataclass(eq=False)
class OutboxSender:
    deliveries: Deliveries
    deliver: Deliver
    _: KW_ONLY
    owner: str
    timers: Timers
    """The runtime's scheduler: the poll and each row's next try run on it."""
    batch: int = 50
    concurrency: int = 8
    poll_every: float = POLL_EVERY
    claim_for: timedelta = CLAIM_FOR
    jitter: Callable[[float, float], float] = random.uniform
    email: bool = False
    """Whether this sender delivers the e-mail rows (`email_*`) rather than Slack's."""
    poll_job: str = field(init=False)
    timing: Timing = field(init=False)
    _started: bool = field(init=False, default=False)
    _filling: asyncio.Task[None] | None = field(init=False, default=None)
    _again: bool = field(init=False, default=False)
    _inflight: set[asyncio.Task[None]] = field(init=False, default_factory=set)
    _failures: dict[int, int] = field(init=False, default_factory=dict)
    """Failed tries per row in this process: the backoff doubles with these, not with the
    row's claims (a kill, a lapse or a wait for an earlier try's outcome is no failure)."""

    def __post_init__(self) -> None:
        self.poll_job = f"{POLL_JOB}-email" if self.email else POLL_JOB
        self.timing = Timing(self.claim_for.total_seconds())

    def wake(self) -> None:
        """Something was just written, or a slot freed: look now instead of at the next poll."""
        if not self._started:
            return
        if self._filling is not None and not self._filling.done():
            self._again = True
            return
        self._filling = asyncio.create_task(self._fill_now(), name="outbox fill")

    def start(self) -> None:
        self._started = True
        self.timers.every(self.poll_every, self._poll, name=self.poll_job)
        self.wake()

    @property
    def running(self) -> bool:
        return self._started and self.poll_job in self.timers.job_names

    async def stop(self) -> None:
        self._started = False
        self.timers.cancel(self.poll_job)
        tasks = [t for t in (self._filling, *self._inflight) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._filling = None

    async def drain(self) -> None:
        """Wait until nothing is being claimed or sent (before a clock moved by hand moves)."""
        while pending := [t for t in (self._filling, *self._inflight) if t and not t.done()]:
            await asyncio.wait(pending)

    async def send_due(self) -> int:
        """Deliver every row that is due now, `concurrency` at a time; how many were claimed."""
        handled = 0
        while True:
            handled += await self._fill()
            if not self._inflight:
                return handled
            await asyncio.wait(self._inflight, return_when=asyncio.FIRST_COMPLETED)

    async def _fill(self) -> int:
        """Claim rows for the free slots and start each in its own task; how many."""
        free = min(self.batch, self.concurrency - len(self._inflight))
        if free <= 0:
            return 0
        claimed_at = time.monotonic()
        now = await self.deliveries.database_now()  # the database's clock decides claims
        items = await self.deliveries.claim_outbox(
            self.owner, now=now, until=now + self.claim_for, limit=free, email=self.email
        )
        # The claim never holds two rows of one subject, so these may go out together.
        for item in items:
            attempt = Attempt(item, self.timing, claimed_at)
            task = asyncio.create_task(self._send(attempt), name=f"outbox {item.id}")
            self._inflight.add(task)
            task.add_done_callback(self._sent)
        return len(items)

    def _sent(self, task: asyncio.Task[None]) -> None:
        self._inflight.discard(task)
        self.wake()  # a slot is free

    async def _poll(self) -> None:
        """The scheduler's job: rows due by now (retries, other processes' rows)."""
        self.wake()

    async def _fill_now(self) -> None:
        while True:
            self._again = False
            try:
                await self._fill()
            except Exception as exc:
                log.warning("outbox: claiming failed (%r); trying again shortly", exc)
            if not self._again:
                return

    async def _send(self, attempt: Attempt) -> None:
        """Deliver one row within its claim, then say how it went (sent, later, given up)."""
        item = attempt.item
        try:
            try:
                await asyncio.wait_for(self.deliver(attempt), attempt.remaining() - 1e-3)
            except TimeoutError as exc:
                if attempt.remaining() > 0.01:
                    raise  # a call inside timed out (a post past its budget)
                raise TimeoutError(f"not done within its {self.timing.claim:g} s claim") from exc
        except Undeliverable as exc:
            log.warning("outbox: %s %s given up: %s", item.topic, item.subject_id, exc)
            await self._finish(item, error=str(exc)[:500])
        except RetryAt as exc:
            what = item.topic, item.subject_id
            log.info("outbox: %s %s again in %.1f s: %s", *what, exc.after, exc)
            await self._retry(item, exc.after, str(exc))
        except WaitsItsTurn as exc:
            log.debug("outbox: %s %s waits its turn: %s", item.topic, item.subject_id, exc)
            await self._retry(item, TURN_WAIT, str(exc))
        except Misconfigured as exc:
            log.warning("outbox: %s %s waits: %s", item.topic, item.subject_id, exc)
            delay = min(backoff(self._failed(item), self.jitter), 60.0)
            await self._retry(item, delay, str(exc))
        except Exception as exc:
            failures = self._failed(item)
            delay = backoff(failures, self.jitter)
            log.info(
                "outbox: %s %s failed (try %d), again in %.0f s: %r",
                item.topic,
                item.subject_id,
                failures,
                delay,
                exc,
            )
            await self._retry(item, delay, repr(exc))
        else:
            await self._finish(item)
            log.info("outbox: %s %s delivered", item.topic, item.subject_id)

    def _failed(self, item: OutboxItem) -> int:
        self._failures[item.id] = self._failures.get(item.id, 0) + 1
        return self._failures[item.id]

    async def _finish(self, item: OutboxItem, error: str | None = None) -> None:
        self._failures.pop(item.id, None)
        try:
            await self.deliveries.finish_outbox(
                item.id, self.owner, at=self.timers.clock(), error=error
            )
        except Exception as exc:  # the row is sent again once the claim lapses; looked up first
            log.warning("outbox: could not mark %s %s sent: %r", item.topic, item.subject_id, exc)

    async def _retry(self, item: OutboxItem, after: float, error: str) -> None:
        """Try the row again `after` seconds from now, counted by the database's clock, and
        have the scheduler look then."""
        after = max(after, 0.0)
        try:
            await self.deliveries.retry_outbox(item.id, self.owner, after=after, error=error[:500])
        except Exception as exc:  # the claim lapses by itself
            log.warning("outbox: could not reschedule %s %s: %r", item.topic, item.subject_id, exc)
            return
        if self._started:
            when = self.timers.clock() + timedelta(seconds=after)
            self.timers.at(when, self._poll, name=RETRY_JOB.format(item.id))


def backoff(
    attempts: int,
    jitter: Callable[[float, float], float] = random.uniform,
    *,
    cap: float = MAX_BACKOFF,
) -> float:
    """Seconds before the next try: doubling from 1 s, capped (at 5 minutes), with jitter so
    a backlog after an outage does not come back as one burst."""
    ceiling = min(cap, 2.0 ** max(attempts - 1, 0))
    return jitter(ceiling / 2, ceiling)


class OutboxNudge:
    """The runtime's notifier beside an outbox sender: every notification is already an
    outbox row (the database wrote it with the change), so telling only wakes the sender.
    Slack's sender delivers every kind of row; a channel that delivers fewer (the e-mails)
    leaves the others out."""

    def __init__(self) -> None:
        self.sender: OutboxSender | None = None

    def wake(self) -> None:
        if self.sender is not None:
            self.sender.wake()

    async def approval_requested(self, approval: Approval, run: Run | None) -> None:
        self.wake()

    async def approval_decided(self, approval: Approval, run: Run | None) -> None:
        self.wake()

    async def reminder_due(self, approval: Approval, run: Run | None, *, escalated: bool) -> None:
        self.wake()

    async def effect_needs_human(self, page: Page, run: Run | None) -> None:
        self.wake()

    async def run_finished(self, run: Run) -> None:
        self.wake()
