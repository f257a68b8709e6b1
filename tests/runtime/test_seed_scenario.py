"""The seed scenario: a one-step budget charges and stops; a new Runtime on a new connection
resumes it, the model re-issues the charge under a new call id and gets the recorded result,
and the world holds exactly one charge."""

from __future__ import annotations

import json
from pathlib import Path

from runtime_scenarios import CountingModel
from runtime_scenarios import OpenDb
from runtime_scenarios import assert_well_formed

from examples.refund_agent import charge
from examples.world import payments
from runtime import Agent
from runtime import Budget
from runtime import Runtime
from runtime import ScriptedModel
from runtime import tool_call
from store import EffectStatus
from store import RunStatus

CHARGE = {"invoice_id": "INV-4471", "amount_cents": 500}
SCRIPT = [
    tool_call("charge", CHARGE),
    tool_call("charge", CHARGE),
    "Charged the restocking fee for order 4471.",
]


def biller() -> tuple[Agent, CountingModel]:
    model = CountingModel(ScriptedModel(SCRIPT))
    return Agent("biller", model=model, tools=[charge], system_prompt="Charge fees."), model


async def start_with_one_step(open_db: OpenDb) -> str:
    store = await open_db()
    agent, _ = biller()
    rt = Runtime(store, [agent], worker_id="first-process")
    run_id = await rt.start("biller", "Charge the fee for order 4471", budget=Budget(max_steps=1))
    await store.close()
    return run_id


async def test_one_step_budget_charges_then_stops(open_db: OpenDb, world: Path) -> None:
    run_id = await start_with_one_step(open_db)

    rt = Runtime(await open_db(), [biller()[0]], worker_id="reader")
    run = await rt.get(run_id)
    assert run.status == RunStatus.FAILED
    assert run.stop_reason == "step_budget"
    assert run.usage.steps == 1
    assert [p[:3] for p in payments()] == [("charge", "INV-4471", 500)]
    state = await rt.store.load_state(run_id)
    assert [m.role for m in state.messages] == ["system", "user", "assistant", "tool"]


async def test_resume_in_new_runtime_answers_without_charging_again(
    open_db: OpenDb, world: Path
) -> None:
    run_id = await start_with_one_step(open_db)
    agent, model = biller()
    rt = Runtime(await open_db(), [agent], worker_id="second-process")

    run = await rt.resume(run_id, budget=Budget(max_steps=5))

    assert run.status == RunStatus.DONE
    assert run.stop_reason == "answered"
    assert run.usage.steps == 3
    assert model.calls == 2
    assert [p[:3] for p in payments()] == [("charge", "INV-4471", 500)]
    effects = await rt.store.list_effects(run_id)
    assert [(e.tool, e.status) for e in effects] == [("charge", EffectStatus.COMPLETED)]


async def test_reissued_charge_gets_the_recorded_result(open_db: OpenDb, world: Path) -> None:
    run_id = await start_with_one_step(open_db)
    rt = Runtime(await open_db(), [biller()[0]], worker_id="second-process")

    await rt.resume(run_id, budget=Budget(max_steps=5))

    state = await rt.store.load_state(run_id)
    assert_well_formed(state.messages)
    calls = [c for m in state.messages for c in m.tool_calls]
    assert [c.id for c in calls] == ["call_1_1", "call_2_1"]
    assert calls[0].arguments == calls[1].arguments == CHARGE
    results = {m.tool_call_id: json.loads(m.content) for m in state.messages if m.role == "tool"}
    (effect,) = await rt.store.list_effects(run_id)
    assert results["call_1_1"] == results["call_2_1"] == effect.result
    assert effect.call_id == "call_1_1"
    (payment,) = payments()
    assert payment[3] == effect.idempotency_key
    assert effect.result["id"].endswith(effect.idempotency_key[-8:])
