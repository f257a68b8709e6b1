"""The run queue (docs/scale-out.md): runs wait in the database, and a worker drives only what
it has room for.

A run that needs a driver and has none is *ready* in the database: a new run, a parked one
whose last approval was decided (in any process, by a person or a timer), one whose lease
lapsed or was given back. This worker claims the oldest ready runs, at most `capacity` at
a time, in the transaction that takes their leases (`Store.claim_runs`: `FOR UPDATE SKIP
LOCKED` on PostgreSQL, so two workers never claim one run and never wait on each other),
and drives each under that lease: its epoch fences the driver like any other. What is over
its capacity stays in the queue for the next worker with room.

It claims when woken: by this process (a run created here, a decision made here, a drive
that ended and left room), by another's commit (`run_ready`, `approval_decided` over
LISTEN/NOTIFY, `runtime.runs.wakeups`), or by a lease lapsing (`recovery.follow_lapses`);
and every `poll` seconds whatever happened, the safety net for a lost notification.

Each claim checks the database's schema: once it is newer than this worker knows (a newer
release migrated it), the claim takes nothing and the worker steps aside
(`runtime.runs.aside`): the queue claims no more, and its drivers hand their runs back.
The version is also read when a migration's notification arrives and on each poll, so a
worker with no room to claim steps aside as soon.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable
from collections.abc import Callable
from datetime import timedelta

from runtime.deps import Deps
from store import errors

log = logging.getLogger("signoff.queue")

ERROR_PAUSE = 1.0
"""Seconds to wait after a claim failed (the database unreachable) before the next."""


class RunQueue:
    def __init__(
        self,
        deps: Deps,
        drive: Callable[[str], Awaitable[object]],
        *,
        capacity: int,
        poll: float,
        on_claimed: Callable[[int], None] | None = None,
    ) -> None:
        if capacity < 1:
            raise ValueError(f"a worker's capacity is at least one run, not {capacity}")
        self.deps, self._drive_run = deps, drive
        self.capacity, self.poll = capacity, poll
        self._on_claimed = on_claimed
        self.driving: dict[str, asyncio.Task[None]] = {}
        """The runs this worker claimed and drives now."""
        self.claimed_total = 0
        self._wake = asyncio.Event()
        self._requeue = True  # the first pass looks for stranded runs too
        self._check = False
        self._decided: set[str] = set()
        self._stopping = False
        self._loop: asyncio.Task[None] | None = None
        deps.aside.on_step_aside(self._wake.set)

    def start(self) -> None:
        if self._loop is None:
            self._stopping = False
            self._loop = asyncio.get_running_loop().create_task(self._run(), name="signoff-queue")

    def wake(self, *, requeue: bool = False, schema: bool = False, decided: str = "") -> None:
        """Claim what is ready now. `requeue`: first put back in the queue the runs that need
        a driver and are not in it (a lapsed lease, a parked run with every approval
        decided), which costs a look at every running and parked run. `schema`: first read
        the schema's version (a migration was announced). `decided`: a run a decision made
        here unblocked: first make that run ready if its decision's transaction could not
        (`Store.ready_decided_runs`), which costs a look at that run only."""
        self._requeue = self._requeue or requeue
        self._check = self._check or schema
        if decided:
            self._decided.add(decided)
        self._wake.set()

    async def _run(self) -> None:
        while not self._stopping and not self.deps.aside.active:
            # Not `asyncio.wait_for`: on Python 3.11 it swallows a cancellation that comes
            # in the loop turn its wait ends in (a driver's end wakes the queue as `stop`
            # cancels both), and the queue then never stopped (issue 44.4's lost round).
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.poll):
                    await self._wake.wait()
            if self._stopping:
                return
            if not self._wake.is_set():
                self._requeue = self._check = True  # the poll: a lost notification, a lapse
            self._wake.clear()
            requeue, self._requeue = self._requeue, False
            check, self._check = self._check, False
            decided, self._decided = self._decided, set()
            try:
                await self._pass(requeue=requeue, check=check, decided=decided)
            except errors.SchemaTooNew as newer:
                self.deps.aside.seen(newer.details["found"], newer.details["supported"])
            except Exception:
                log.exception("could not claim ready runs; trying again")
                self._requeue = requeue or self._requeue
                self._decided |= decided
                await asyncio.sleep(ERROR_PAUSE)
                self._wake.set()

    async def _pass(self, *, requeue: bool, check: bool, decided: set[str]) -> None:
        store = self.deps.store
        if check:
            self.deps.aside.seen(await store.schema_version(), store.known_schema)
        if self.deps.aside.active:
            return
        if requeue and (stranded := await store.requeue_runs()):
            log.info("recovering %d run(s): nobody drove them; back in the queue", stranded)
        elif decided:
            await store.ready_decided_runs(sorted(decided))
        await self._fill()

    async def _fill(self) -> None:
        """Claim ready runs until this worker is full or the queue is empty."""
        while (room := self.capacity - len(self.driving)) > 0:
            now = self.deps.clock()
            until = now + timedelta(seconds=self.deps.lease_ttl)
            claimed = await self.deps.store.claim_runs(
                self.deps.worker_id, limit=room, until=until, now=now
            )
            for claim in claimed:
                self.deps.claimed[claim.run_id] = claim.epoch
                self.driving[claim.run_id] = asyncio.get_running_loop().create_task(
                    self._drive(claim.run_id, claim.epoch), name=f"signoff-drive-{claim.run_id}"
                )
            self.claimed_total += len(claimed)
            if claimed and self._on_claimed is not None:
                self._on_claimed(len(claimed))
            taken = [c for c in claimed if c.lapsed_owner not in (None, self.deps.worker_id)]
            if taken:  # their workers died or froze holding them
                self.deps.telemetry.leases_taken_over(len(taken))
            if not claimed.more:  # it took every ready run: asking again would find none
                return

    async def _drive(self, run_id: str, epoch: int) -> None:
        try:
            await self._drive_run(run_id)
        except errors.UnreadableRecord as exc:
            log.warning("run %s is put back: %s", run_id, exc)
            await self._unreadable()
        except Exception:
            log.exception("run %s failed in the queue's driver; it is put back", run_id)
        finally:
            await self._let_go(run_id, epoch)
            # A later claim of the run (ready again while this drive finished, after its
            # lease went back) has its own task here, waiting for the run's lock: keep it.
            if self.driving.get(run_id) is asyncio.current_task():
                del self.driving[run_id]
            self.wake()  # room for the next ready run

    async def _unreadable(self) -> None:
        """A newer Signoff most likely wrote what could not be read: if the schema is newer,
        step aside; else wait a while before this slot claims again (a row no release can
        read would otherwise be claimed, and put back, at once and forever)."""
        store = self.deps.store
        with contextlib.suppress(Exception):
            self.deps.aside.seen(await store.schema_version(), store.known_schema)
        if not self.deps.aside.active:
            await asyncio.sleep(ERROR_PAUSE)

    async def _let_go(self, run_id: str, epoch: int) -> None:
        """A claimed lease no driver adopted (the run had ended meanwhile): give it back."""
        if self.deps.claimed.get(run_id) != epoch:
            return
        del self.deps.claimed[run_id]
        try:
            await self.deps.store.release_lease(run_id, self.deps.worker_id, epoch=epoch)
        except Exception:
            log.exception("could not give back the lease on run %s; it lapses", run_id)

    async def stop(self) -> None:
        """Stop claiming and stop the drivers: their runs keep their checkpoints, and their
        leases are given back for another worker to claim them. The loop stops first, and
        says so by a flag as well as by cancelling, so it claims nothing after this."""
        self._stopping = True
        tasks = [t for t in (self._loop, *self.driving.values()) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._loop = None
