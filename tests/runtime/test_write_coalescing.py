"""Results of reads ride in the transaction that records the next model reply; results of
effects that must not run twice are committed before the model is asked again."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

import pytest
from support.wrapped_store import WrappedStore

from runtime import Agent
from runtime import Runtime
from runtime import ScriptedModel
from runtime import tool
from runtime import tool_call
from store import Batch
from store import Committed
from store import EffectStatus
from store import Store
from store import open_store

WORKER = Path(__file__).parent / "workers" / "coalesce_worker.py"


@dataclass(eq=False)
class CountingStore(WrappedStore):
    """Counts the transactions a runtime commits; everything else passes through."""

    commits: int = field(init=False, default=0)

    async def commit(self, batch: Batch) -> Committed:
        self.commits += 1
        return await self.store.commit(batch)


@tool(description="Read.", effect="read")
async def look(n: int) -> str:
    return f"seen {n}"


@tool(description="Write, once.", effect="irreversible", requires_approval=False)
async def write(n: int) -> str:
    return f"wrote {n}"


async def commits_for(store: Store, chosen: str, steps: int) -> int:
    script = [tool_call(chosen, {"n": i}) for i in range(steps)] + ["done"]
    agent = Agent(f"a-{chosen}", model=ScriptedModel(script), tools=[look, write])
    counting = CountingStore(store)
    rt = Runtime(counting, [agent], worker_id="w")  # type: ignore[arg-type]
    await rt.start(agent.name, "go", run_id=f"r-{chosen}")
    return counting.commits


async def test_a_read_step_costs_one_transaction_a_mutating_step_two(store: Store) -> None:
    reads, writes = await commits_for(store, "look", 10), await commits_for(store, "write", 10)
    assert reads == 10 + 1
    assert writes == 2 * 10 + 1


async def test_history_is_the_same_whichever_transaction_carried_a_result(store: Store) -> None:
    await commits_for(store, "look", 3)
    await commits_for(store, "write", 3)
    shape = {
        run: [(cp.step, [m.role for m in cp.messages]) for cp in await store.history(run)]
        for run in ("r-look", "r-write")
    }
    assert shape["r-look"] == shape["r-write"]


def run_worker(url: str, ledger: Path, die_at_turn: int | None) -> int:
    env = dict(os.environ)
    if die_at_turn is not None:
        env["SIGNOFF_TEST_DIE_AT_TURN"] = str(die_at_turn)
    done = subprocess.run(
        [sys.executable, str(WORKER), url, str(ledger)], env=env, timeout=60, capture_output=True
    )
    return done.returncode


def count(ledger: Path, name: str) -> int:
    path = ledger / name
    return len(path.read_text().splitlines()) if path.exists() else 0


@pytest.mark.parametrize(("die_at_turn", "peeks"), [(2, 2), (3, 1)])
async def test_a_crash_while_the_model_thinks_loses_only_what_may_run_again(
    tmp_path: Path, die_at_turn: int, peeks: int
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    assert run_worker(url, tmp_path, die_at_turn) == -9
    assert run_worker(url, tmp_path, None) == 0

    store = await open_store(url)
    try:
        run = await store.get_run("run")
        assert (run.status, run.stop_reason) == ("done", "answered")
        assert count(tmp_path, "post") == 1
        assert count(tmp_path, "peek") == peeks
        effects = {e.tool: e for e in await store.list_effects("run")}
        assert effects["post"].status == EffectStatus.COMPLETED
        assert await store.list_pages() == []
    finally:
        await store.close()
