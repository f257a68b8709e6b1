"""Holding a run's lease while driving it: acquire, renew in the background, release."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from datetime import datetime, timedelta

from runtime.errors import RunBusy
from store import Store

log = logging.getLogger("signoff.lease")


@contextlib.asynccontextmanager
async def hold_lease(
    store: Store,
    run_id: str,
    owner: str,
    *,
    ttl: float,
    clock: Callable[[], datetime],
) -> AsyncIterator[None]:
    """Hold the lease for the block; RunBusy if another live worker holds it."""
    now = clock()
    if not await store.acquire_lease(run_id, owner, until=now + timedelta(seconds=ttl), now=now):
        raise RunBusy(f"run {run_id!r} is being driven by another worker", run_id=run_id)
    renewer = asyncio.create_task(_renew(store, run_id, owner, ttl, clock))
    try:
        yield
    finally:
        renewer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await renewer
        await store.release_lease(run_id, owner)


async def _renew(
    store: Store, run_id: str, owner: str, ttl: float, clock: Callable[[], datetime]
) -> None:
    while True:
        await asyncio.sleep(ttl / 3)
        until = clock() + timedelta(seconds=ttl)
        if not await store.renew_lease(run_id, owner, until=until):
            log.warning("lost the lease on run %s; its next write will be refused", run_id)
            return


class RunLocks:
    """One in-process driver per run: a worker keeps its lease across restarts, so the lease
    alone cannot stop this process from driving the same run twice."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, run_id: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(run_id, (asyncio.Lock(), 0))
        self._locks[run_id] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[run_id]
            if users == 1:
                del self._locks[run_id]
            else:
                self._locks[run_id] = (lock, users - 1)

    def busy(self, run_id: str) -> bool:
        return run_id in self._locks
