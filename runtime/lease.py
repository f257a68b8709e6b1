"""Holding a run's lease while driving it: acquire, renew in the background, release."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from datetime import datetime, timedelta
from typing import Any

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
        try:
            await store.release_lease(run_id, owner)
        except Exception:
            log.exception("could not release the lease on run %s; it expires in %gs", run_id, ttl)


async def _renew(
    store: Store, run_id: str, owner: str, ttl: float, clock: Callable[[], datetime]
) -> None:
    while True:
        await asyncio.sleep(ttl / 3)
        until = clock() + timedelta(seconds=ttl)
        try:
            renewed = await store.renew_lease(run_id, owner, until=until)
        except Exception:
            log.exception("could not renew the lease on run %s; trying again", run_id)
            continue
        if not renewed:
            log.warning("lost the lease on run %s; its next write will be refused", run_id)
            return


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

    def held_here(self, run_id: str) -> bool:
        """Whether the calling task is the one holding this run (a re-entrant call)."""
        holder = self._holders.get(run_id)
        return holder is not None and holder is asyncio.current_task()
