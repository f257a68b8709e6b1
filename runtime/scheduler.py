"""The runtime's one scheduler: every timer of a process runs on its one APScheduler
`AsyncIOScheduler` and reads the runtime's clock: approval reminders, escalations and expiries,
page reminders, outbox retries, lease renewals, and the periodic jobs of `signoff serve`.

Approvals: the store holds the truth (each pending approval's deadline and next reminder are
columns), so the scheduler holds almost nothing: one date job armed at the earliest due time,
re-armed after every tick, plus an interval job (every 5 s: two index lookups) that picks up
the approvals other processes created, such as a run started from the CLI.
On start it ticks at once, so whatever fell due while the process was down fires right away.
A tick acts only through compare-and-set (`ApprovalDesk.tick`), so a job that fires twice, or
in two processes at once, acts once. Memory stays flat however many approvals are pending.

Each job's next due time is also kept on the runtime's clock, so a scheduler started with
`paused=True` holds every job on APScheduler without firing any, and `run_due` fires those
due by the runtime's clock: a test moves a fake clock through a day in milliseconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from typing import Any
from typing import Protocol

from apscheduler.jobstores.base import JobLookupError
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.schedulers.base import STATE_PAUSED

log = logging.getLogger("signoff.scheduler")

NEXT_DUE_JOB = "signoff-next-due"
POLL_JOB = "signoff-poll"
MAX_ROUNDS = 1000
"""`run_due` rounds at one instant at most (a job re-armed at or before now runs again)."""

Job = Callable[[], Awaitable[object]]


class _Timers(Protocol):
    async def tick(self, now: datetime) -> datetime | None: ...


class _Clocked(Protocol):
    async def database_now(self) -> datetime: ...


class Scheduled(Protocol):
    """What the scheduler drives: the runtime's desk timers, its store and its clock (the
    `Runtime` facade has all three; it tells `Scheduler.poke` of new due times)."""

    @property
    def desk(self) -> _Timers: ...

    @property
    def store(self) -> _Clocked: ...

    @property
    def clock(self) -> Callable[[], datetime]: ...


class Timers(Protocol):
    """What a part of the runtime or a surface needs to put a timer on the scheduler."""

    def every(self, seconds: float, job: Job, *, name: str) -> None: ...

    def at(self, when: datetime, job: Job, *, name: str) -> None: ...

    def cancel(self, name: str) -> None: ...

    def ensure_running(self) -> None: ...

    @property
    def clock(self) -> Callable[[], datetime]: ...

    @property
    def job_names(self) -> set[str]: ...


@dataclass
class _Entry:
    job: Job
    every: float | None
    """Seconds between runs; None: once, at `due_at`."""
    due_at: datetime
    """When it is next due, by the runtime's clock."""


class Scheduler:
    """`now`, when given, reads the database's clock: each approval tick judges what is due
    by it, and the next wake-up is armed at that due time shifted by how far this host's
    clock is from the database's right then, so a host clock that is off or jumps neither
    fires everything at once nor sleeps through a deadline. Without it, the runtime's store's
    (the database's, which judges what is due)."""

    def __init__(
        self,
        rt: Scheduled,
        *,
        poll_every: float = 5.0,
        now: Callable[[], Awaitable[datetime]] | None = None,
    ) -> None:
        self.rt = rt
        self.poll_every = poll_every
        self.now = now
        self._offset = timedelta(0)
        """How far APScheduler's clock (the host's) was ahead of the database's at the last
        tick."""
        self.armed_at: datetime | None = None
        self._scheduler = AsyncIOScheduler(timezone=UTC)
        self._entries: dict[str, _Entry] = {}
        self._tick_lock = asyncio.Lock()
        self._poked: datetime | None = None
        self._listening = False
        """Between `start` and `stop`: pokes arm the next-due job."""

    @property
    def clock(self) -> Callable[[], datetime]:
        """The runtime's clock, which every job here reads."""
        return self.rt.clock

    async def start(self, *, paused: bool = False) -> None:
        """Start APScheduler, fire every approval already due, and arm the next due time.
        `paused`: APScheduler holds the jobs but fires none; `run_due` fires them."""
        self.ensure_running(paused=paused)
        self.every(self.poll_every, self.tick, name=POLL_JOB)
        self._listening = True
        await self.tick()

    def ensure_running(self, *, paused: bool = False) -> None:
        """Start APScheduler itself if it is not running (no approval ticks): a lease taken
        by a runtime nobody started a scheduler for is still renewed."""
        if not self._scheduler.running:
            self._scheduler.start(paused=paused)

    @property
    def running(self) -> bool:
        return bool(self._scheduler.running)

    @property
    def paused(self) -> bool:
        return bool(self._scheduler.state == STATE_PAUSED)

    @property
    def job_names(self) -> set[str]:
        """The jobs APScheduler holds now."""
        return {job.id for job in self._scheduler.get_jobs()}

    async def stop(self) -> None:
        self._listening = False
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)
        self._entries.clear()

    def every(self, seconds: float, job: Job, *, name: str) -> None:
        """Run `job` every `seconds` (e.g. recovery of stranded runs, a lease's renewal)."""
        self._entries[name] = _Entry(job, seconds, self.clock() + timedelta(seconds=seconds))
        self._add(name, "interval", max_instances=1, seconds=seconds)

    def at(self, when: datetime, job: Job, *, name: str) -> None:
        """Run `job` once at `when` (the runtime's clock, the same as the database's in a
        healthy deployment), replacing the job of that name if there is one."""
        self._entries[name] = _Entry(job, None, when)
        self._add(name, "date", max_instances=2, run_date=when + self._offset)

    def cancel(self, name: str) -> None:
        self._entries.pop(name, None)
        with contextlib.suppress(JobLookupError):
            self._scheduler.remove_job(name)

    def next_due_at(self) -> datetime | None:
        """When the next job is due, by the runtime's clock."""
        return min((entry.due_at for entry in self._entries.values()), default=None)

    async def run_due(self) -> int:
        """Fire every job due by the runtime's clock, earliest first, until none is; how
        many ran. What APScheduler does as time passes, for a clock moved by hand."""
        ran = 0
        for _ in range(MAX_ROUNDS):
            now = self.clock()
            due = sorted(
                (entry.due_at, name) for name, entry in self._entries.items() if entry.due_at <= now
            )
            if not due:
                return ran
            for _, name in due:
                await self._fire(name)
                ran += 1
        raise RuntimeError(f"jobs kept falling due at {self.clock()}: one re-arms itself at once")

    def poke(self, at: datetime) -> None:
        """A new deadline or reminder exists; arm for it if it is sooner than the armed one
        (before `start` or after `stop`, nothing: the first tick finds it in the store)."""
        if not self._listening:
            return
        if self._tick_lock.locked():
            self._poked = at if self._poked is None else min(self._poked, at)
        if self.armed_at is None or at < self.armed_at:
            self._arm(at)

    async def tick(self) -> None:
        """Do whatever approval work is due now, then arm the job for the next due time."""
        async with self._tick_lock:
            try:
                next_due = await self.rt.desk.tick(await self._now())
            except Exception:
                log.exception("approval tick failed; the poll job will try again")
                return
            self.armed_at = None
            poked, self._poked = self._poked, None
            due = [at for at in (next_due, poked) if at is not None]
            if due:
                self._arm(min(due))

    async def _now(self) -> datetime:
        # APScheduler sleeps by this host's wall clock, whatever the runtime's clock says.
        host = datetime.now(UTC)
        db_now = await (self.now or self.rt.store.database_now)()
        self._offset = host - db_now if not self.paused else timedelta(0)
        return db_now

    def _arm(self, at: datetime) -> None:
        self.armed_at = at
        self.at(at, self.tick, name=NEXT_DUE_JOB)

    def _add(self, name: str, trigger: str, *, max_instances: int, **when: Any) -> None:
        async def fire() -> None:
            # APScheduler awaits only what it recognises as a coroutine function; anything
            # else (a lambda returning a coroutine) would go to a thread and never be awaited.
            await self._fire(name)

        self._scheduler.add_job(
            fire,
            trigger,
            id=name,
            replace_existing=True,
            coalesce=True,
            max_instances=max_instances,
            misfire_grace_time=None,
            **when,
        )

    async def _fire(self, name: str) -> None:
        entry = self._entries.get(name)
        if entry is None:
            return
        if entry.every is None:
            del self._entries[name]  # the job may arm itself again while it runs
        else:
            entry.due_at = self.clock() + timedelta(seconds=entry.every)
        try:
            await entry.job()
        except Exception:
            log.exception("scheduled job %s failed; it runs again when next due", name)


ApprovalScheduler = Scheduler
"""The name it had when it drove only approvals."""
