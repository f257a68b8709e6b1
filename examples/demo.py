"""The refund agent end to end on the embedded SQLite store, with a human in the loop.

    python -m examples.demo ["Refund order 4471"]

It starts a run, which parks before the refund; approves the refund as a manager would from
Slack; lets the run finish; then prints the run's history and what reached the outside
world. Then a second run asks to refund the same order for $20: the refund is keyed by the
order, and the key is bound to the arguments, so this is a conflict, never a replay of the
first refund's receipt. Its card says what the first run refunded and what this one asks; a
plain approval is refused; the manager declines it, and the run says the refund was not made.
Run it twice: the second time the same run ids are resumed, not duplicated, and nothing is
refunded twice.
"""

from __future__ import annotations

import asyncio
import re
import sys

from rich.console import Console
from rich.markup import escape

from bot import views
from examples import world
from examples.refund_agent import agent
from runtime import Runtime, errors
from runtime.approvals import conflict_text
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
        await conflict(out, rt, task)
        out.print("payments in the outside world:", world.payments())
        out.print("e-mails in the outside world:", world.emails())
    finally:
        await store.close()


async def conflict(out: Console, rt: Runtime, task: str) -> None:
    """A second refund of the same order for another amount: asked as a conflict, declined."""
    order = re.search(r"order\s+#?(\w+)", task, re.IGNORECASE)
    if order is None:
        return
    again = f"Refund order {order[1]} for $20"
    run_id = "demo-" + "-".join(again.lower().replace("$", "").split())
    await rt.start(agent.name, again, run_id=run_id, requested_by=REQUESTER)
    for approval in await rt.approvals(run_id, state=ApprovalState.PENDING):
        if approval.conflict is not None:
            # in plain words: the card's own text is Slack markup (mentions, dates)
            said = conflict_text(approval.conflict, approval.args, approval.sensitive)
            out.print(f"run [bold]{run_id}[/]'s card says:", escape(said))
        try:
            await rt.decide(approval.id, "approved", by=MANAGER)
        except errors.KeyConflict as refused:
            out.print(f"  {MANAGER} approves: refused, nothing was done: {refused}")
            await rt.decide(approval.id, "declined", by=MANAGER, reason="already refunded")
            out.print(f"  {MANAGER} declines it: already refunded")
    state = await rt.store.load_state(run_id)
    out.print(
        f"run [bold]{run_id}[/]: {(await rt.get(run_id)).status.value}:", state.messages[-1].content
    )


if __name__ == "__main__":
    asyncio.run(main(" ".join(sys.argv[1:]) or "Refund order 4471"))
