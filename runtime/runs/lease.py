"""Holding a run's lease while driving it: acquire, renew in the background, release."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from dataclasses import field
from datetime import timedelta
from typing import TYPE_CHECKING
from typing import Any
from typing import Protocol

from runtime.errors import RunBusy
from store import Store

if TYPE_CHECKING:
    from runtime.scheduler import Timers

log = logging.getLogger("signoff.lease")


@dataclass(eq=False)
class Lease:
    """A lease this process holds: its epoch (every write for the run carries it, and the
    store refuses it once another lease was taken) and whether it is known to be lost."""

    run_id: str
    epoch: int
    ttl: float = 30.0
    lost: bool = False
    renewed_at: float = field(default_factory=time.monotonic)
    """When (this process's monotonic clock) the store last confirmed the lease."""

    @property
    def held(self) -> bool:
        """Known to be ours: not lost, and confirmed within one lease length."""
        return not self.lost and time.monotonic() - self.renewed_at < self.ttl


@contextlib.asynccontextmanager
async def hold_lease(
    store: Store,
    run_id: str,
    owner: str,
    *,
    ttl: float,
    timers: Timers,
    held: dict[str, Lease] | None = None,
    claimed: dict[str, int] | None = None,
    keeper: Watcher | None = None,
) -> AsyncIterator[Lease]:
    """Hold the lease for the block, renewed every third of it on the runtime's scheduler;
    RunBusy if another live worker holds it. `held` maps the runs this process holds to their
    leases: a block inside another on the same run shares its lease (taking it again would
    start a new epoch and fence the outer one off). `claimed` maps the runs this process's
    queue claimed (their leases taken in the claim) to their epochs: the first block on such
    a run adopts that lease instead of taking another. `keeper` renews it from a thread of
    its own while the event loop is blocked (`runtime.runs.lease_keeper`)."""
    held = {} if held is None else held
    if run_id in held:
        yield held[run_id]
        return
    epoch = None if claimed is None else claimed.pop(run_id, None)
    if epoch is None:
        now = timers.clock()
        until = now + timedelta(seconds=ttl)
        epoch = await store.acquire_lease(run_id, owner, until=until, now=now)
    if epoch is None:
        raise RunBusy(
            f"run {run_id!r} is being driven by another worker (if that worker is gone, its "
            f"lease lapses within {ttl:g}s; try again then)",
            run_id=run_id,
        )
    lease = held[run_id] = Lease(run_id, epoch, ttl)
    job = f"lease:{run_id}:{epoch}"
    turn = asyncio.Lock()  # a renewal under way finishes before the release, never after it
    released = False

    async def renew() -> None:
        async with turn:
            if released:
                return
            await _renew(store, lease, owner, timers)
        if lease.lost:
            timers.cancel(job)

    timers.ensure_running()
    timers.every(ttl / 3, renew, name=job)
    if keeper is not None:
        keeper.watch()
    try:
        yield lease
    finally:
        del held[run_id]
        timers.cancel(job)
        async with turn:
            released = True
        if not lease.lost:
            try:
                await store.release_lease(run_id, owner, epoch=epoch)
            except Exception:
                log.exception(
                    "could not release the lease on run %s; it lapses in %gs", run_id, ttl
                )


async def _renew(store: Store, lease: Lease, owner: str, timers: Timers) -> None:
    """Renew the lease unless the store says it is not ours any more; then the driver stops at
    its next write (which the store would refuse anyway). A renewal that fails (the database
    busy or unreachable) is tried again at the next turn: meanwhile another worker may take
    the run over, and the epoch fences this one's writes off."""
    now = timers.clock()
    until = now + timedelta(seconds=lease.ttl)
    try:
        renewed = await store.renew_lease(
            lease.run_id, owner, until=until, now=now, epoch=lease.epoch
        )
    except Exception:
        log.exception("could not renew the lease on run %s; trying again", lease.run_id)
        return
    if not renewed:
        lease.lost = True
        log.warning(
            "lost the lease on run %s (epoch %d): stopped driving it", lease.run_id, lease.epoch
        )
        return
    lease.renewed_at = time.monotonic()


class Watcher(Protocol):
    def watch(self) -> None:
        """A lease is held now: keep it while the event loop is blocked."""


class RunLocks:
    """One in-process driver per run: a worker keeps its lease across restarts when its
    `worker_id` is stable, so the lease alone cannot stop this process driving a run twice."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}
        self._holders: dict[str, asyncio.Task[Any] | None] = {}

    @contextlib.asynccontextmanager
    async def hold(self, run_id: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(run_id, (asyncio.Lock(), 0))
        self._locks[run_id] = (lock, users + 1)
        try:
            async with lock:
                self._holders[run_id] = asyncio.current_task()
                try:
                    yield
                finally:
                    self._holders.pop(run_id, None)
        finally:
            lock, users = self._locks[run_id]
            if users == 1:
                del self._locks[run_id]
            else:
                self._locks[run_id] = (lock, users - 1)

    def busy(self, run_id: str) -> bool:
        """Whether a task of this process holds (or waits for) the run."""
        return run_id in self._locks

    def held_here(self, run_id: str) -> bool:
        """Whether the calling task is the one holding this run (a re-entrant call)."""
        holder = self._holders.get(run_id)
        return holder is not None and holder is asyncio.current_task()
