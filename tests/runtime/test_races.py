"""Races between drivers, deciders and cancellers, and effects shared by a lineage."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from runtime import Agent
from runtime import NullNotifier
from runtime import Runtime
from runtime import ScriptedModel
from runtime import ToolContext
from runtime import tool
from runtime import tool_call
from runtime.errors import InvalidRequest
from store import Approval
from store import ApprovalState
from store import EffectStatus
from store import Run
from store import Store
from store import errors

WIRED: list[tuple[str, str]] = []


@tool(description="Wire money.", effect="irreversible")
async def wire(to: str, cents: int, *, ctx: ToolContext) -> dict[str, bool]:
    WIRED.append((ctx.run_id, ctx.idempotency_key))
    await asyncio.sleep(0.05)
    return {"ok": True}


@tool(
    description="Wire money, and hang.",
    effect="irreversible",
    requires_approval=False,
    timeout=0.05,
)
async def wire_slowly(to: str) -> str:
    WIRED.append(("slow", to))
    await asyncio.sleep(1)
    return "never"


@pytest.fixture(autouse=True)
def fresh_ledger() -> None:
    WIRED.clear()


def wiring_agent() -> Agent:
    script = [tool_call("wire", {"to": "acme", "cents": 100}), "done"]
    return Agent("payer", model=ScriptedModel(script), tools=[wire])


async def test_a_run_and_its_fork_approved_at_once_wire_once(store: Store) -> None:
    rt = Runtime(store, [wiring_agent()], worker_id="w")
    run_id = await rt.start("payer", "pay acme", requested_by="U0REQ")
    await rt.fork(run_id, from_step=0)
    pending = await rt.approvals(state=ApprovalState.PENDING)
    assert len(pending) == 2

    await asyncio.gather(*(rt.decide(a.id, "approved", by="U0BOSS") for a in pending))

    assert len(WIRED) == 1


async def test_a_fork_does_not_redo_an_effect_in_doubt_in_its_parent(store: Store) -> None:
    script = [tool_call("wire_slowly", {"to": "acme"}), "done"]
    agent = Agent("slow", model=ScriptedModel(script), tools=[wire_slowly])
    rt = Runtime(store, [agent], worker_id="w")
    run_id = await rt.start("slow", "pay acme")
    assert (await rt.get(run_id)).stop_reason == "in_doubt"

    fork_id = await rt.fork(run_id, from_step=0)

    fork = await rt.get(fork_id)
    assert (fork.status, fork.stop_reason) == ("failed", "in_doubt")
    assert WIRED == [("slow", "acme")]
    assert await store.list_effects(fork_id) == []


class DecideAtOnce(NullNotifier):
    """A decision that lands while the run is still parking: made by the notifier itself before
    it returns (an auto-approver), or by another worker at the same moment (a human who
    clicked at once, handled by another process)."""

    def __init__(self) -> None:
        self.decider: Runtime | None = None
        self.elsewhere: set[asyncio.Task[Any]] = set()

    async def approval_requested(self, approval: Approval, run: Run | None) -> None:
        if self.decider is None:
            return
        decision = self.decider.decide(approval.id, "approved", by="U0BOSS")
        if self.decider is self.owner:
            await decision
        else:
            self.elsewhere.add(asyncio.ensure_future(decision))

    owner: Runtime | None = None


@pytest.mark.parametrize("elsewhere", [False, True], ids=["same-runtime", "other-worker"])
async def test_a_decision_made_while_the_run_parks_is_not_lost(
    store: Store, elsewhere: bool
) -> None:
    notifier = DecideAtOnce()
    rt = Runtime(store, [wiring_agent()], notifier, worker_id="server")
    notifier.owner = rt
    notifier.decider = Runtime(store, [wiring_agent()], worker_id="cli") if elsewhere else rt

    run_id = await rt.start("payer", "pay acme", requested_by="U0REQ")

    for _ in range(200):  # the other worker's resume waits for this driver to park
        if (await rt.get(run_id)).status == "done":
            break
        await asyncio.sleep(0.05)
    assert (await rt.get(run_id)).status == "done"
    assert len(WIRED) == 1
    await asyncio.gather(*notifier.elsewhere)


async def test_cancel_never_turns_a_finished_run_into_a_cancelled_one(store: Store) -> None:
    rt = Runtime(store, [Agent("talker", model=ScriptedModel(["hello"]))], worker_id="w")
    run, _ = await rt.create("talker", "say hello")
    really_get = rt._deps.run

    async def finish_between_check_and_cancel(run_id: str) -> Any:
        seen = await really_get(run_id)
        rt._deps.run = really_get  # type: ignore[method-assign]
        await rt.drive(run_id)
        return seen

    rt._deps.run = finish_between_check_and_cancel  # type: ignore[method-assign]
    with pytest.raises(InvalidRequest, match="already done"):
        await rt.cancel(run.id)

    assert (await rt.get(run.id)).status == "done"


async def test_a_failing_lease_renewal_neither_fails_the_run_nor_keeps_the_lease(
    store: Store,
) -> None:
    @tool(description="Think slowly.", effect="read")
    async def ponder(q: str) -> str:
        await asyncio.sleep(0.3)
        return "ok"

    async def locked(*args: Any, **kwargs: Any) -> bool:
        raise errors.DatabaseError("sqlite: database is locked")

    store.renew_lease = locked  # type: ignore[method-assign]
    agent = Agent(
        "p", model=ScriptedModel([tool_call("ponder", {"q": "x"}), "done"]), tools=[ponder]
    )
    rt = Runtime(store, [agent], worker_id="w", lease_ttl=0.2)

    await rt.start("p", "think", run_id="r")

    run = await rt.get("r")
    assert (run.status, run.lease_owner) == ("done", None)


async def test_a_fork_approved_after_its_parent_wired_gets_the_recorded_result(
    store: Store,
) -> None:
    rt = Runtime(store, [wiring_agent()], worker_id="w")
    run_id = await rt.start("payer", "pay acme", requested_by="U0REQ")
    fork_id = await rt.fork(run_id, from_step=0)
    [parent_approval] = await rt.approvals(run_id)
    [fork_approval] = await rt.approvals(fork_id)
    await rt.decide(parent_approval.id, "approved", by="U0BOSS")
    [parent_effect] = await store.list_effects(run_id)
    assert parent_effect.status == EffectStatus.COMPLETED

    await rt.decide(fork_approval.id, "approved", by="U0BOSS")

    assert len(WIRED) == 1
    assert (await rt.get(fork_id)).status == "done"
    assert await store.list_effects(fork_id) == []
