"""The processes of the many-workers crash test, on one PostgreSQL database.

    python fleet.py worker <url> <worker-id>     drive whatever needs driving, until killed
    python fleet.py approver <url> <count>       approve, settle in-doubt effects, until done

A worker recovers in a loop: it takes the lease (compare-and-set) of every run that is
running without a live lease or whose approval was decided, and drives it. The approver is
the humans: it approves every pending approval (without driving the run: a worker does) and,
as the on-call, settles effects a killed worker left in doubt, having checked the tools'
ledger first. It exits 0 once all `count` runs are done. The tools' ledger is
`SIGNOFF_WORLD_DB`.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "crash"))

import refund_driver

from examples import refund_agent
from runtime import Runtime, errors
from store import RunStatus, open_store

LEASE_TTL = 3.0
POLL = 0.05


async def worker(url: str, worker_id: str) -> None:
    store = await open_store(url, migrate=False, pool_size=8)
    rt = Runtime(store, [refund_agent.agent], worker_id=worker_id, lease_ttl=LEASE_TTL)
    print("ready", flush=True)
    while True:
        await rt.recover()
        await asyncio.sleep(POLL)


async def approver(url: str, count: int) -> int:
    store = await open_store(url, migrate=False, pool_size=4)
    rt = Runtime(store, [refund_agent.agent], worker_id="approver", lease_ttl=LEASE_TTL)
    print("ready", flush=True)
    while True:
        for approval in await rt.approvals(state="pending"):
            with contextlib.suppress(errors.AlreadyDecided):
                await rt.decide(approval.id, "approved", by=refund_driver.APPROVER, resume=False)
        with contextlib.suppress(errors.RunBusy):  # a worker has it: settle it next pass
            await refund_driver.handle_in_doubt(rt)
        done = await store.list_runs(RunStatus.DONE, limit=count + 1)
        if len(done) == count:
            print("done", flush=True)
            return 0
        await asyncio.sleep(POLL)


if __name__ == "__main__":
    role, url, arg = sys.argv[1:4]
    if role == "worker":
        asyncio.run(worker(url, arg))
    else:
        sys.exit(asyncio.run(approver(url, int(arg))))
