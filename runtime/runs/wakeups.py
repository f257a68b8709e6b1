"""Waking this process when another one commits something it should act on.

With a store that `Listens` (PostgreSQL), every outbox row another process commits arrives
here by its topic: a decision makes this process look for runs to resume and drive each one
it finds (a lease taken by compare-and-set picks the one process that does; with a run
queue, the queue claims them, as it claims a new run on `run_ready`), a new approval or
reminder re-arms the approval scheduler, and every row wakes the outbox sender; a migration
makes the queue read the schema's version (a worker older than it steps aside). Nothing here
is needed for correctness: the polls (recovery, the scheduler's, the sender's) stay, and
catch whatever a lost connection missed. Bursts coalesce: one pass at a time, and one more
after it if anything arrived meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable
from collections.abc import Callable
from datetime import datetime
from typing import Any
from typing import Protocol

from runtime.runs.queue import RunQueue
from store import Run
from store import Store
from store.base import Listens

log = logging.getLogger("signoff.wakeups")

RESUMES = {"approval_decided"}
READY = "run_ready"
"""Not an outbox row: a run was created and waits in the queue (`notify_run_ready`)."""
SCHEMA_CHANGED = "schema_changed"
"""Not an outbox row: a migration committed (`notify_schema_changed`); a worker that runs an
older Signoff steps aside."""
SCHEDULES = {"approval_requested", "approval_reminded", "approval_decided"}


class Coalesced:
    """Run `job` on request; requests made while it runs make it run once more after."""

    def __init__(self, job: Callable[[], Awaitable[Any]], name: str) -> None:
        self.job, self.name = job, name
        self._task: asyncio.Task[None] | None = None
        self._again = False

    def request(self) -> None:
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._task = asyncio.get_running_loop().create_task(self._run(), name=self.name)

    async def _run(self) -> None:
        while True:
            self._again = False
            try:
                await self.job()
            except Exception:
                log.exception("%s failed; the next poll will try again", self.name)
            if not self._again:
                return

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


class Drives(Protocol):
    """What the wakeups need: the store, the clock, this worker's id and driving a run (the
    `Runtime` facade has all four)."""

    @property
    def store(self) -> Store: ...

    @property
    def clock(self) -> Callable[[], datetime]: ...

    @property
    def worker_id(self) -> str: ...

    async def drive(self, run_id: str) -> Run: ...


class Wakeups:
    def __init__(
        self,
        rt: Drives,
        *,
        schedule: Callable[[], Awaitable[Any]] | None = None,
        outbox: Callable[[], None] | None = None,
        queue: RunQueue | None = None,
    ) -> None:
        self.rt = rt
        self._queue = queue
        self._resume = Coalesced(self._resume_decided, "signoff-wake-resume")
        self._schedule = None if schedule is None else Coalesced(schedule, "signoff-wake-tick")
        self._outbox = outbox
        self._driving: dict[str, asyncio.Task[None]] = {}
        self._stop: Callable[[], Awaitable[None]] | None = None

    async def start(self) -> bool:
        """Listen, if the store can; whether it does."""
        if not isinstance(self.rt.store, Listens):
            return False
        try:
            self._stop = await self.rt.store.listen(self.heard)
        except Exception:
            log.exception("cannot listen for other processes' commits; polling only")
            return False
        return True

    def heard(self, topic: str) -> None:
        if topic in (READY, SCHEMA_CHANGED):
            if self._queue is not None:
                self._queue.wake(schema=topic == SCHEMA_CHANGED)
            return
        if self._outbox is not None:
            self._outbox()
        if topic in RESUMES:
            if self._queue is not None:
                # The decision's transaction made its run ready (or, where it could not, the
                # deciding process wakes that run): nothing to look for beyond the queue.
                self._queue.wake()
            else:
                self._resume.request()
        if topic in SCHEDULES and self._schedule is not None:
            self._schedule.request()

    async def _resume_decided(self) -> None:
        """Start driving each run a decision unblocked, each in its own task: a long drive
        never delays the next decision's resume."""
        for run_id in await self.rt.store.runs_to_recover(self.rt.clock(), owner=self.rt.worker_id):
            if run_id not in self._driving:
                task = asyncio.get_running_loop().create_task(self._drive(run_id))
                self._driving[run_id] = task

    async def _drive(self, run_id: str) -> None:
        try:
            await self.rt.drive(run_id)
        except Exception:
            log.exception("run %s could not resume; recovery will try again", run_id)
        finally:
            self._driving.pop(run_id, None)

    async def stop(self) -> None:
        if self._stop is not None:
            with contextlib.suppress(Exception):
                await self._stop()
            self._stop = None
        await self._resume.stop()
        if self._schedule is not None:
            await self._schedule.stop()
        for task in list(self._driving.values()):
            task.cancel()
        await asyncio.gather(*self._driving.values(), return_exceptions=True)
