"""The humans of the many-servers crash test, in a process of their own.

    python fleet.py <url> <count>

It approves every pending approval without driving the run (a server does, woken by the
decision's notification) and, as the on-call, settles effects a killed server left in doubt,
having checked the tools' ledger (`SIGNOFF_WORLD_DB`) first. It exits 0 once all `count`
runs are done.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "crash"))

import refund_driver

from examples import refund_agent
from runtime import Runtime
from runtime import errors
from store import RunStatus
from store import open_store

LEASE_TTL = 3.0
POLL = 0.05


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
    sys.exit(asyncio.run(approver(sys.argv[1], int(sys.argv[2]))))
