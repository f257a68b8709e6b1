"""A process the edit crash test starts: it SIGKILLs itself between an edited approval and the
tool call, and a later life recovers the run.

    python edit_worker.py <store-db> decide     start the run, approve it edited, SIGKILL
    python edit_worker.py <store-db> recover    recover whatever was left, print the run

The world (the payment provider) is the file `SIGNOFF_WORLD_DB` names.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from examples.refund_agent import agent
from runtime import Runtime
from runtime.approvals.policy import Policies
from runtime.approvals.policy import Policy
from store import open_store

RUN_ID = "run-edit"
EDITED = {"order_id": "4471", "amount_cents": 2000, "restocking_fee_cents": 0}


async def main(db: str, phase: str) -> None:
    policies = Policies(tools={"issue_refund": Policy(allow_edit=True)})
    async with open_store(f"sqlite:///{db}") as store:
        rt = Runtime(store, [agent], policies=policies, worker_id="edit-worker")
        if phase == "decide":
            await rt.start(agent.name, "Refund order 4471 for $25", run_id=RUN_ID)
            [asked] = await rt.approvals(RUN_ID)
            await rt.decide(asked.id, "approved", by="U0BOB", args=EDITED, resume=False)
            os.kill(os.getpid(), signal.SIGKILL)  # durable decision; the tool never called
        await rt.recover()
        run = await rt.get(RUN_ID)
        print(run.status.value, run.stop_reason)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
