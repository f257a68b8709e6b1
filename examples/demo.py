"""The refund agent end to end on the embedded SQLite store, with a human in the loop.

    python -m examples.demo ["Refund order 4471"]

It starts a run, which parks before the refund; approves the refund as a manager would from
Slack; lets the run finish; then prints the run's history and what reached the outside
world. Run it twice: the second time the same run id is resumed, not duplicated, and nothing
is refunded twice.
"""

from __future__ import annotations

import asyncio
import sys

from rich.console import Console

from bot import views
from examples import world
from examples.refund_agent import agent
from runtime import Runtime
from store import ApprovalState, open_store

REQUESTER, MANAGER = "U0REQUESTER", "U0MANAGER"


async def main(task: str) -> None:
    out = Console()
    store = await open_store("sqlite:///signoff.db")
    try:
        rt = Runtime(store, [agent], worker_id="demo")
        run_id = "demo-" + "-".join(task.lower().split())
        await rt.start(agent.name, task, run_id=run_id, requested_by=REQUESTER)
        run = await rt.get(run_id)
        out.print(f"run [bold]{run_id}[/]: {run.status.value} ({run.stop_reason})")
        for approval in await rt.approvals(run_id, state=ApprovalState.PENDING):
            out.print(f"  {MANAGER} approves {approval.tool}({approval.args})")
            await rt.decide(approval.id, "approved", by=MANAGER)
        run = await rt.get(run_id)
        out.print(
            f"run [bold]{run_id}[/]: {run.status.value} ({run.stop_reason}); "
            f"{views.usage_text(run)}"
        )
        out.print(views.history_table(await rt.history(run_id)))
        out.print("payments in the outside world:", world.payments())
        out.print("e-mails in the outside world:", world.emails())
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(" ".join(sys.argv[1:]) or "Refund order 4471"))
