"""Model failures: rate limits are waited out and retried; any other error fails the run with
stop reason `error` and the error text, and `resume` continues it."""

from __future__ import annotations

from runtime_scenarios import FlakyModel
from runtime_scenarios import OpenDb
from runtime_scenarios import assert_well_formed
from runtime_scenarios import counter_agent
from runtime_scenarios import counting_policy

from runtime import Budget
from runtime import ModelError
from runtime import RateLimited
from runtime import Runtime
from runtime import ScriptedModel
from runtime.runs.model_turn import MAX_RATE_LIMIT_RETRIES
from store import RunStatus
from store import Store


async def test_rate_limits_are_retried(store: Store) -> None:
    model = FlakyModel(
        ScriptedModel(counting_policy),
        [RateLimited(retry_after=0.001), RateLimited(retry_after=0.001)],
    )
    rt = Runtime(store, [counter_agent(model)], worker_id="w")

    run_id = await rt.start("counter", "Count", budget=Budget(max_steps=2))

    run = await rt.get(run_id)
    assert (run.stop_reason, run.usage.steps, model.calls) == ("step_budget", 2, 4)
    assert_well_formed((await store.load_state(run_id)).messages)


async def test_endless_rate_limits_fail_the_run_with_an_error(store: Store) -> None:
    limits = [RateLimited("slow down", retry_after=0.001) for _ in range(50)]
    model = FlakyModel(ScriptedModel(counting_policy), limits)
    rt = Runtime(store, [counter_agent(model)], worker_id="w")

    run_id = await rt.start("counter", "Count")

    run = await rt.get(run_id)
    assert (run.status, run.stop_reason) == (RunStatus.FAILED, "error")
    assert "slow down" in (run.error or "")
    assert model.calls == MAX_RATE_LIMIT_RETRIES + 1  # the first try and every retry
    assert run.usage.steps == 0


async def test_model_error_fails_the_run_and_resume_continues_it(open_db: OpenDb) -> None:
    model = FlakyModel(ScriptedModel(counting_policy), [])
    rt = Runtime(await open_db(), [counter_agent(model)], worker_id="w")
    run_id = await rt.start("counter", "Count", budget=Budget(max_steps=1))
    model.failures.append(ConnectionError("provider unreachable"))

    failed = await rt.resume(run_id, budget=Budget(max_steps=3))

    assert (failed.status, failed.stop_reason) == (RunStatus.FAILED, "error")
    assert "provider unreachable" in (failed.error or "")
    assert failed.usage.steps == 1

    fresh = Runtime(await open_db(), [counter_agent(ScriptedModel(counting_policy))], worker_id="x")
    run = await fresh.resume(run_id)

    assert (run.status, run.stop_reason, run.error) == (RunStatus.FAILED, "step_budget", None)
    assert run.usage.steps == 3
    assert_well_formed((await fresh.store.load_state(run_id)).messages)


async def test_a_script_entry_can_be_an_error(store: Store) -> None:
    model = ScriptedModel([ModelError("the provider is down")])
    rt = Runtime(store, [counter_agent(model)], worker_id="w")

    run_id = await rt.start("counter", "Count")

    run = await rt.get(run_id)
    assert (run.status, run.stop_reason) == (RunStatus.FAILED, "error")
    assert "the provider is down" in (run.error or "")


async def test_an_exhausted_script_fails_with_an_error(store: Store) -> None:
    rt = Runtime(store, [counter_agent(ScriptedModel([]))], worker_id="w")

    run_id = await rt.start("counter", "Count")

    run = await rt.get(run_id)
    assert (run.stop_reason, run.usage.steps) == ("error", 0)
    assert "script has 0 replies" in (run.error or "")
