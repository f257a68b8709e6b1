"""A run driven by a ScriptedModel policy resumes in a fresh process exactly where it was:
the transcript equals that of a run nobody interrupted."""

from __future__ import annotations

from pathlib import Path

import pytest
from runtime_scenarios import WORKER_ID
from runtime_scenarios import OpenDb
from runtime_scenarios import Worker
from runtime_scenarios import assert_well_formed
from runtime_scenarios import order_with_fee
from runtime_scenarios import refunder_agent

from examples.world import emails
from examples.world import payments
from runtime import Budget
from runtime import Runtime
from store import RunState
from store import RunStatus
from store import open_store

RUN_ID = "refund-run"


async def uninterrupted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, task: str) -> RunState:
    """The same run, start to finish in this process, against its own database and world."""
    monkeypatch.setenv("SIGNOFF_WORLD_DB", str(tmp_path / "calm-world.db"))
    store = await open_store(f"sqlite:///{tmp_path / 'calm.db'}")
    try:
        await Runtime(store, [refunder_agent()], worker_id="calm").start(
            "refunder", task, run_id=RUN_ID
        )
        return await store.load_state(RUN_ID)
    finally:
        await store.close()


@pytest.mark.parametrize(
    "interruption",
    [{"max_steps": 2}, {"die": "model@3"}, {"die": "model@5"}],
    ids=["budget-stop-at-2", "killed-asking-for-step-3", "killed-asking-for-step-5"],
)
async def test_policy_run_resumes_in_a_fresh_process_like_an_uninterrupted_one(
    run_worker: Worker,
    open_db: OpenDb,
    world: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    interruption: dict[str, object],
) -> None:
    task = f"Refund order {order_with_fee()}"
    done = run_worker("refunder", RUN_ID, task, **interruption)
    assert done.returncode == (0 if "max_steps" in interruption else -9), done.stderr
    store = await open_db()
    assert (await store.get_run(RUN_ID)).status != RunStatus.DONE

    run = await Runtime(store, [refunder_agent()], worker_id=WORKER_ID).resume(
        RUN_ID, budget=Budget(max_steps=12)
    )
    resumed = await store.load_state(RUN_ID)
    charged, mailed = payments(), emails()

    expected = await uninterrupted(tmp_path, monkeypatch, task)
    assert run.status == RunStatus.DONE
    assert resumed.messages == expected.messages
    assert resumed.usage == expected.usage
    assert_well_formed(resumed.messages)
    assert [kind for kind, *_ in charged] == ["refund", "charge"]
    assert len(mailed) == 1
