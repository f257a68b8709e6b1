"""Reminders, escalations and timeouts on APScheduler's AsyncIOScheduler.

The store holds the truth (each pending approval's deadline and next reminder are columns),
so the scheduler holds almost nothing: one date job armed at the earliest due time, re-armed
after every tick, plus an interval job (every 5 s: two index lookups) that picks up the
approvals other processes created, such as a run started from the CLI.
On start it ticks at once, so whatever fell due while the process was down fires right away.
A tick acts only through compare-and-set (`ApprovalDesk.tick`), so a job that fires twice, or
in two processes at once, acts once. Memory stays flat however many approvals are pending.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol

from apscheduler.schedulers.asyncio import AsyncIOScheduler

log = logging.getLogger("signoff.scheduler")

NEXT_DUE_JOB = "signoff-next-due"
POLL_JOB = "signoff-poll"


class _Timers(Protocol):
    async def tick(self, now: datetime) -> datetime | None: ...


class _Clocked(Protocol):
    async def database_now(self) -> datetime: ...


class Scheduled(Protocol):
    """What the scheduler drives: the runtime's desk timers, its store, and the hook it is
    told of new due times through (the `Runtime` facade has all three)."""

    on_due: Callable[[datetime], None] | None

    @property
    def desk(self) -> _Timers: ...

    @property
    def store(self) -> _Clocked: ...


class ApprovalScheduler:
    """`now`, when given, reads the database's clock: each tick judges what is due by it,
    and the next wake-up is armed at that due time shifted by how far this host's clock is
    from the database's right then, so a host clock that is off or jumps neither fires
    everything at once nor sleeps through a deadline. Without it, the runtime's store's (the
    database's, which judges what is due)."""

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
        """How far this host's clock was ahead of the database's at the last tick."""
        self.armed_at: datetime | None = None
        self._scheduler = AsyncIOScheduler(timezone=UTC)
        self._tick_lock = asyncio.Lock()
        self._poked: datetime | None = None

    async def start(self) -> None:
        """Start APScheduler, fire everything already due, and arm the next due time."""
        self._scheduler.start()
        self._scheduler.add_job(
            self.tick,
            "interval",
            seconds=self.poll_every,
            id=POLL_JOB,
            coalesce=True,
            max_instances=1,
            misfire_grace_time=None,
        )
        self.rt.on_due = self.poke
        await self.tick()

    @property
    def running(self) -> bool:
        return bool(self._scheduler.running)

    async def stop(self) -> None:
        if self.rt.on_due == self.poke:
            self.rt.on_due = None
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)

    def every(self, seconds: float, job: Callable[[], Awaitable[object]], *, name: str) -> None:
        """Run `job` periodically on the same scheduler (e.g. recovery of stranded runs)."""

        async def run() -> None:
            # APScheduler awaits only what it recognises as a coroutine function; anything
            # else (a lambda returning a coroutine) would go to a thread and never be awaited.
            await job()

        self._scheduler.add_job(
            run,
            "interval",
            seconds=seconds,
            id=name,
            coalesce=True,
            max_instances=1,
            misfire_grace_time=None,
            replace_existing=True,
        )

    def poke(self, at: datetime) -> None:
        """A new deadline or reminder exists; arm for it if it is sooner than the armed one."""
        if self._tick_lock.locked():
            self._poked = at if self._poked is None else min(self._poked, at)
        if self.armed_at is None or at < self.armed_at:
            self._arm(at)

    async def tick(self) -> None:
        """Do whatever is due now, then arm the job for the next due time."""
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
        host = datetime.now(UTC)
        db_now = await (self.now or self.rt.store.database_now)()
        self._offset = host - db_now
        return db_now

    def _arm(self, at: datetime) -> None:
        self.armed_at = at
        self._scheduler.add_job(
            self.tick,
            "date",
            run_date=at + self._offset,  # APScheduler sleeps by this host's clock
            id=NEXT_DUE_JOB,
            replace_existing=True,
            coalesce=True,
            max_instances=2,
            misfire_grace_time=None,
        )
