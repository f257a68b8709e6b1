"""Decision statistics from the audit trail, on every store backend: waiting times, decline,
edit and expiry rates, busiest approvers; the window leaves older requests out."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from runtime import Agent
from runtime import Policies
from runtime import Runtime
from runtime import ScriptedModel
from runtime import ToolContext
from runtime import tool
from store import Store
from tests.conftest import Clock


@tool(description="Refund.", effect="irreversible")
async def refund(order_id: str, amount_cents: int, *, ctx: ToolContext) -> dict[str, Any]:
    return {}


async def test_stats_count_what_people_decided_and_how_long_it_took(
    store: Store, clock: Clock
) -> None:
    policies = Policies.model_validate({"default": {"allow_edit": True, "timeout": "1h"}})
    agent = Agent("ops", model=ScriptedModel(["ok"]), tools=[refund])
    rt = Runtime(store, [agent], policies=policies, clock=clock)

    async def ask(n: int) -> str:
        args = {"order_id": f"o-{n}", "amount_cents": 100}
        approval, _ = await rt.request_approval("refund", args, requested_by="U0AGENT")
        return approval.id

    old = await ask(0)
    await rt.decide(old, "approved", by="U0OLD")
    clock.advance(days=2)
    since = clock()
    ids = [await ask(n) for n in range(1, 6)]
    clock.advance(minutes=10)
    await rt.decide(ids[0], "approved", by="U0BOSS")
    clock.advance(minutes=10)
    await rt.decide(ids[1], "declined", by="U0ANN", reason="no")
    clock.advance(minutes=10)
    await rt.decide(ids[2], "approved", by="U0BOSS", args={"order_id": "o-3", "amount_cents": 50})
    clock.advance(minutes=40)
    await rt.desk.tick(clock())  # ids[3] and ids[4] expire at 1h

    stats = (await rt.approval_stats(since=since)).as_dict()

    assert (stats["requested"], stats["decided"], stats["auto_decided"]) == (5, 5, 0)
    assert (stats["decline_rate"], stats["edit_rate"], stats["expiry_rate"]) == (0.2, 0.2, 0.4)
    assert stats["busiest_approvers"] == [("U0BOSS", 2), ("U0ANN", 1)]
    assert stats["p50_wait_seconds"] == 1800.0
    assert 3600.0 <= stats["p90_wait_seconds"] <= 4200.0
    empty = await rt.approval_stats(since=clock() + timedelta(hours=1))
    assert (empty.requested, empty.quantile(0.5), empty.rate(1)) == (0, None, None)
