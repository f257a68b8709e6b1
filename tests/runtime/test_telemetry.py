"""What the runtime reports to an operator's instruments: one model step per reply with the
usage the run records, each mutating tool's outcome, and a lease taken over only when another
worker's lease expired (not a parked run resumed, nor this worker's own run after a restart).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from dataclasses import field

from runtime_scenarios import CountingModel
from runtime_scenarios import counter_agent
from runtime_scenarios import counting_policy
from runtime_scenarios import wait_for_lapse
from test_lease_recovery import driving_into_the_gate
from test_lease_recovery import finish

from runtime import Agent
from runtime import Budget
from runtime import Runtime
from runtime import ScriptedModel
from runtime import ToolContext
from runtime import tool
from runtime import tool_call
from store import Store
from store import Usage


@dataclass
class Recorded:
    steps: list[tuple[str, Usage]] = field(default_factory=list)
    effects: list[tuple[str, str, str]] = field(default_factory=list)
    takeovers: list[int] = field(default_factory=list)

    def model_step(self, agent: str, seconds: float, usage: Usage) -> None:
        assert seconds >= 0
        self.steps.append((agent, usage))

    def effect_ended(self, tool: str, classification: str, outcome: str, seconds: float) -> None:
        self.effects.append((tool, classification, outcome))

    def leases_taken_over(self, count: int) -> None:
        self.takeovers.append(count)

    def loop_blocked(self, tool: str, seconds: float) -> None:
        raise AssertionError(f"{tool} blocked the loop for {seconds}s")


async def test_each_reply_is_a_step_with_the_usage_the_run_records(store: Store) -> None:
    seen = Recorded()
    model = CountingModel(ScriptedModel(counting_policy))
    rt = Runtime(store, [counter_agent(model)], worker_id="w", telemetry=seen)
    run_id = await rt.start("counter", "Count", budget=Budget(max_steps=3))

    run = await rt.get(run_id)
    assert len(seen.steps) == run.usage.steps == 3
    total = sum((usage for _, usage in seen.steps), Usage())
    assert (total.input_tokens, total.output_tokens) == (
        run.usage.input_tokens,
        run.usage.output_tokens,
    )
    assert {agent for agent, _ in seen.steps} == {"counter"}
    assert len(await store.list_effects(run_id)) == 3
    assert seen.effects == []  # reads are not effects on the world


@tool(description="Ship a parcel.", effect="irreversible", requires_approval=False)
def ship(parcel: str, *, ctx: ToolContext) -> str:
    if parcel == "broken":
        raise ValueError("the courier refused it")
    return f"shipped {parcel}"


async def test_each_mutating_call_reports_its_outcome(store: Store) -> None:
    seen = Recorded()
    calls = [tool_call("ship", {"parcel": "p1"}), tool_call("ship", {"parcel": "broken"})]
    agent = Agent("shipper", model=ScriptedModel([calls, "Done."]), tools=[ship])
    rt = Runtime(store, [agent], worker_id="w", telemetry=seen)
    await rt.start("shipper", "Ship")
    assert seen.effects == [
        ("ship", "irreversible", "completed"),
        ("ship", "irreversible", "failed"),
    ]


async def test_only_an_expired_lease_of_another_worker_counts_as_taken_over(store: Store) -> None:
    a = await driving_into_the_gate(store, "worker-a", frozen=True)
    seen = Recorded()
    fresh = CountingModel(ScriptedModel(counting_policy))
    rt_b = Runtime(store, [counter_agent(fresh)], worker_id="worker-b", telemetry=seen)

    assert await rt_b.recover() == []  # worker-a's lease is alive: nothing taken
    await wait_for_lapse(store, owner="worker-b")
    assert await rt_b.recover() == [a.run_id]
    assert seen.takeovers == [1]

    a.model.gate.set()
    await finish(a.task)
    assert await rt_b.recover() == []
    assert seen.takeovers == [1]
    await asyncio.sleep(0)
