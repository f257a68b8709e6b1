"""Start-up recovery (DESIGN rule 7): drive every run that was mid-flight when its worker died.

It acts through the same lease and compare-and-set path as normal driving, so running it
twice, or in two processes at once, is harmless: a run leased to another live worker is left
alone (one leased to this worker's own id, from before a restart, is taken back at once).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runtime.engine import Runtime

log = logging.getLogger("signoff.recovery")

CONCURRENCY = 32


async def recover(rt: Runtime) -> list[str]:
    """Drive runs left `running` without a live lease, and parked runs nobody resumed after
    their last approval was decided. Returns their ids."""
    run_ids = await rt.store.runs_to_recover(rt.clock(), owner=rt.worker_id)
    if not run_ids:
        return []
    log.info("recovering %d run(s)", len(run_ids))
    gate = asyncio.Semaphore(CONCURRENCY)

    async def drive(run_id: str) -> None:
        async with gate:
            try:
                await rt.drive(run_id)
            except Exception:
                log.exception("could not recover run %s", run_id)

    await asyncio.gather(*(drive(run_id) for run_id in run_ids))
    return run_ids
