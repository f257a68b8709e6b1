"""Start-up recovery (docs/architecture.md rule 7): drive every run that was mid-flight when its
worker died, and finish every rollback (or saga) that died before it ended: inside a compensation or
between two. A rollback records its intent before it undoes anything and its end last, so an intent
without an end is what recovery looks for.

It acts through the same lease and compare-and-set path as normal driving, so running it
twice, or in two processes at once, is harmless: a run leased to another live worker is left
alone (one leased to this worker's own id, from before a restart, is taken back at once).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from collections.abc import Callable

from runtime import errors
from runtime.deps import Deps
from store import RunStatus
from store import errors as store_errors

log = logging.getLogger("signoff.recovery")

CONCURRENCY = 32
LAPSE_MARGIN = 0.05
"""How long after a lease's end (by the database's clock) the takeover looks for it."""


async def recover(
    deps: Deps,
    *,
    drive: Callable[[str], Awaitable[object]],
    finish_undo: Callable[[str], Awaitable[object]],
) -> list[str]:
    """Finish rollbacks (and sagas) that died before they ended, then drive runs left
    `running` without a live lease, and parked runs nobody resumed after their last approval
    was decided. Returns their ids."""
    undos = await deps.store.interrupted_undos(deps.clock(), owner=deps.worker_id)
    undos = [run_id for run_id in undos if not deps.locks.held_here(run_id)]
    await _each(undos, finish_undo, "finishing the undo of")
    run_ids = await deps.store.runs_to_recover(deps.clock(), owner=deps.worker_id)
    if run_ids:
        deps.telemetry.leases_taken_over(await _taken_over(deps, run_ids))
    await _each(run_ids, drive, "recovering")
    return undos + [run_id for run_id in run_ids if run_id not in undos]


async def recover_into_queue(
    deps: Deps,
    *,
    finish_undo: Callable[[str], Awaitable[object]],
    requeue: Callable[[], None],
) -> list[str]:
    """Start-up recovery for a worker that drives through the run queue: finish the
    rollbacks that died, give back the leases this worker's id held before it started again
    (those runs wait in the queue, as do all others stranded), and have the queue claim what
    it has room for. Returns the rollbacks finished."""
    undos = await deps.store.interrupted_undos(deps.clock(), owner=deps.worker_id)
    undos = [run_id for run_id in undos if not deps.locks.held_here(run_id)]
    await _each(undos, finish_undo, "finishing the undo of")
    released = await deps.store.release_own_leases(deps.worker_id)
    if released:
        log.info("gave back %d run(s) this worker held before it started again", released)
    requeue()
    return undos


async def _taken_over(deps: Deps, run_ids: list[str]) -> int:
    """How many of these runs another worker held a lease on (it expired): takeovers, as
    against runs parked with every approval decided, or this worker's before a restart."""
    taken = 0
    for run_id in run_ids:
        try:
            run = await deps.store.get_run(run_id)
        except store_errors.NotFound:  # pruned meanwhile
            continue
        taken += run.status == RunStatus.RUNNING and run.lease_owner not in (None, deps.worker_id)
    return taken


async def _each(run_ids: list[str], work: Callable[[str], Awaitable[object]], what: str) -> None:
    if not run_ids:
        return
    log.info("%s %d run(s)", what, len(run_ids))
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(run_id: str) -> None:
        async with gate:
            try:
                await work(run_id)
            except errors.ModelChanged as exc:  # a person chooses: nothing to trace back
                log.warning("%s run %s refused: %s", what, run_id, exc)
            except Exception:
                log.exception("%s run %s failed", what, run_id)

    await asyncio.gather(*(one(run_id) for run_id in run_ids))


async def follow_lapses(
    deps: Deps, recover: Callable[[], Awaitable[object]], *, poll: float
) -> None:
    """Take a run over when the lease another worker holds on it lapses, not a poll later:
    sleep until the next live lease ends by the database's clock (a length, so this host's
    clock does not matter), then recover; at most `poll` apart."""
    while True:
        try:
            left = await deps.store.next_lease_lapse(owner=deps.worker_id, now=deps.clock())
        except Exception:
            log.exception("cannot tell when the next lease lapses; polling")
            left = None
        # With no lease to wait for, look again within a lease: one taken meanwhile lapses
        # no sooner than that (every worker's lease has the same length, in practice).
        wait = min(poll, deps.lease_ttl)
        if left is not None:
            wait = min(wait, max(left, 0.0) + LAPSE_MARGIN)
        await asyncio.sleep(wait)
        try:
            await recover()
        except Exception:
            log.exception("recovery after a lease lapsed failed; trying again")
