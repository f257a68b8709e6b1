"""Budgets survive (docs/architecture.md rule 5): usage is durable, a resumed run continues against
what is left, and every stop names the budget that ended it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from runtime_scenarios import WORKER_ID
from runtime_scenarios import CountingModel
from runtime_scenarios import OpenDb
from runtime_scenarios import Worker
from runtime_scenarios import counter_agent
from runtime_scenarios import counting_policy
from runtime_scenarios import wait_for_lapse

from runtime import Budget
from runtime import Runtime
from runtime import ScriptedModel
from store import EffectStatus
from store import RunStatus
from store import Store
from store.records import utcnow


async def crash_in_step(run_worker: Worker, open_db: OpenDb, step: int = 7) -> Store:
    """A worker process drives an 8-step run and is SIGKILLed inside the tool of `step`, after
    that step's reply was checkpointed."""
    done = run_worker("counter", "count-8", "Count to eight", die=f"tick@{step}", max_steps=8)
    assert done.killed, done.stderr
    store = await open_db()
    state = await store.load_state("count-8")
    assert (state.status, state.step, state.usage.steps) == (RunStatus.RUNNING, step, step)
    effect = await store.get_effect("count-8", f"call_{step}_1")
    assert effect.status == EffectStatus.STARTED
    return store


async def test_crash_at_step_7_of_8_leaves_one_step(run_worker: Worker, open_db: OpenDb) -> None:
    store = await crash_in_step(run_worker, open_db)
    model = CountingModel(ScriptedModel(counting_policy))
    rt = Runtime(store, [counter_agent(model)], worker_id=WORKER_ID)

    run = await rt.resume("count-8")

    assert model.calls == 1
    assert run.status == RunStatus.FAILED
    assert run.stop_reason == "step_budget"
    assert run.usage.steps == 8
    assert run.step == 8
    effects = await store.list_effects("count-8")
    assert [e.status for e in effects] == [EffectStatus.COMPLETED] * 8


async def test_crash_in_the_last_step_resumes_without_asking_the_model(
    run_worker: Worker, open_db: OpenDb
) -> None:
    store = await crash_in_step(run_worker, open_db, step=8)
    model = CountingModel(ScriptedModel(counting_policy))
    rt = Runtime(store, [counter_agent(model)], worker_id=WORKER_ID)

    run = await rt.resume("count-8")

    assert model.calls == 0
    assert (run.stop_reason, run.usage.steps) == ("step_budget", 8)
    assert (await store.get_effect("count-8", "call_8_1")).status == EffectStatus.COMPLETED


async def test_recover_by_another_worker_after_the_lease_expires(
    run_worker: Worker, open_db: OpenDb
) -> None:
    store = await crash_in_step(run_worker, open_db)
    await wait_for_lapse(store)
    model = CountingModel(ScriptedModel(counting_policy))
    later = utcnow() + timedelta(minutes=10)
    rt = Runtime(store, [counter_agent(model)], worker_id="successor", clock=lambda: later)

    assert await rt.recover() == ["count-8"]

    run = await rt.get("count-8")
    assert model.calls == 1
    assert (run.status, run.stop_reason, run.usage.steps) == (RunStatus.FAILED, "step_budget", 8)
    assert run.lease_owner is None


async def test_another_worker_leaves_a_live_lease_alone(
    run_worker: Worker, open_db: OpenDb
) -> None:
    store = await crash_in_step(run_worker, open_db)
    model = CountingModel(ScriptedModel(counting_policy))
    rt = Runtime(store, [counter_agent(model)], worker_id="successor")

    assert await rt.recover() == []
    run = await rt.drive("count-8")

    assert model.calls == 0
    assert (run.status, run.usage.steps, run.lease_owner) == (RunStatus.RUNNING, 7, WORKER_ID)


async def test_resume_raises_limits_but_keeps_usage(store: Store) -> None:
    model = CountingModel(ScriptedModel(counting_policy))
    rt = Runtime(store, [counter_agent(model)], worker_id="w")
    run_id = await rt.start("counter", "Count", budget=Budget(max_steps=3))
    assert (await rt.get(run_id)).usage.steps == 3

    run = await rt.resume(run_id, budget=Budget(max_steps=5))

    assert model.calls == 5
    assert (run.stop_reason, run.usage.steps, run.budget.max_steps) == ("step_budget", 5, 5)


async def test_resume_without_new_limits_gets_no_fresh_allowance(store: Store) -> None:
    model = CountingModel(ScriptedModel(counting_policy))
    rt = Runtime(store, [counter_agent(model)], worker_id="w")
    run_id = await rt.start("counter", "Count", budget=Budget(max_steps=2))
    before = await rt.get(run_id)

    run = await rt.resume(run_id)

    assert model.calls == 2
    assert (run.status, run.stop_reason) == (RunStatus.FAILED, "step_budget")
    assert run.usage == before.usage


async def test_input_token_budget_stops_at_the_first_step_over_it(store: Store) -> None:
    rt = Runtime(store, [counter_agent()], worker_id="w")
    run_id = await rt.start("counter", "Count", budget=Budget(max_input_tokens=60))

    run = await rt.get(run_id)
    assert (run.status, run.stop_reason) == (RunStatus.FAILED, "token_budget")
    assert run.usage.input_tokens >= 60
    assert 1 < run.usage.steps < 8
    previous = await rt.state_at(run_id, run.step - 1)
    assert previous.usage.input_tokens < 60


async def test_output_token_budget_stops(store: Store) -> None:
    rt = Runtime(store, [counter_agent()], worker_id="w")
    run_id = await rt.start("counter", "Count", budget=Budget(max_output_tokens=10))

    run = await rt.get(run_id)
    assert (run.stop_reason, run.usage.output_tokens >= 10) == ("token_budget", True)


async def test_cost_budget_stops(store: Store) -> None:
    model = ScriptedModel(counting_policy, cost_per_1k_input=1.0)
    rt = Runtime(store, [counter_agent(model)], worker_id="w")
    run_id = await rt.start("counter", "Count", budget=Budget(max_cost=0.05))

    run = await rt.get(run_id)
    assert (run.status, run.stop_reason) == (RunStatus.FAILED, "cost_budget")
    assert run.usage.cost >= 0.05
    previous = await rt.state_at(run_id, run.step - 1)
    assert previous.usage.cost < 0.05


async def test_token_budget_raised_on_resume_continues_from_used_tokens(store: Store) -> None:
    rt = Runtime(store, [counter_agent()], worker_id="w")
    run_id = await rt.start("counter", "Count", budget=Budget(max_input_tokens=60))
    used = (await rt.get(run_id)).usage

    run = await rt.resume(run_id, budget=Budget(max_input_tokens=120))

    assert run.stop_reason == "token_budget"
    assert run.usage.steps > used.steps
    assert run.usage.input_tokens >= 120
    assert run.usage.input_tokens > used.input_tokens


@pytest.mark.parametrize(
    ("budget", "reason"),
    [
        (Budget(max_steps=0), "step_budget"),
        (Budget(max_input_tokens=0), "token_budget"),
        (Budget(max_cost=0), "cost_budget"),
    ],
)
async def test_spent_budget_stops_before_any_model_call(
    store: Store, budget: Budget, reason: str
) -> None:
    model = CountingModel(ScriptedModel(counting_policy))
    rt = Runtime(store, [counter_agent(model)], worker_id="w")
    run_id = await rt.start("counter", "Count", budget=budget)

    run = await rt.get(run_id)
    assert (run.stop_reason, run.usage.steps, model.calls) == (reason, 0, 0)


async def test_usage_in_each_checkpoint_matches_the_steps_taken(store: Store) -> None:
    rt = Runtime(store, [counter_agent()], worker_id="w")
    run_id = await rt.start("counter", "Count", budget=Budget(max_steps=4))

    history = await rt.history(run_id)
    assert [c.usage.steps for c in history] == sorted(c.usage.steps for c in history)
    assert all(c.usage.steps == c.step for c in history)
    assert history[-1].stop_reason == "step_budget"
