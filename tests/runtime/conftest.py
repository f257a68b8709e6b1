"""Fixtures for the runtime tests: real SQLite files reopened on new connections, and worker
processes that drive a run until they are killed."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from collections.abc import Awaitable
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import runtime_scenarios as scenarios
from approvals_conftest_helpers import RecordingNotifier
from approvals_conftest_helpers import refund_run
from support.helpers import run_text

from examples.refund_agent import agent as refund_agent
from runtime import Runtime
from store import Store
from store import open_store

HERE = Path(__file__).parent
WORKERS = HERE / "workers"
DRIVE = WORKERS / "drive.py"


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'runs.db'}"


@pytest.fixture
async def open_db(db_url: str) -> AsyncIterator[Callable[[], Awaitable[Store]]]:
    """Open the test's database file on a new connection each call, as a new process would."""
    opened: list[Store] = []

    async def open_new() -> Store:
        store = await open_store(db_url)
        opened.append(store)
        return store

    yield open_new
    for store in opened:
        await store.close()


@pytest.fixture
def run_worker(db_url: str, world: Path) -> Callable[..., Any]:
    """Start `workers/drive.py` on the test's database and world, wait for it to end or die."""

    def run(
        agent: str, run_id: str, task: str, *, die: str | None = None, max_steps: int | None = None
    ) -> Any:
        path = os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
        env = dict(os.environ, SIGNOFF_WORLD_DB=str(world), PYTHONPATH=path)
        env.pop("SIGNOFF_TEST_DIE", None)
        if die is not None:
            env["SIGNOFF_TEST_DIE"] = die
        args = [sys.executable, str(DRIVE), agent, db_url, run_id, task]
        if max_steps is not None:
            args.append(str(max_steps))
        done = run_text(args, env=env)
        return scenarios.Exit(done.returncode, done.stdout, done.stderr)

    return run


@pytest.fixture
def notifier() -> RecordingNotifier:
    """What the test's runtime told the humans (`refund_done`'s runtime tells this one)."""
    return RecordingNotifier()


@pytest.fixture
async def refund_done(
    make_runtime: Callable[..., Runtime], world: Path, notifier: RecordingNotifier
) -> tuple[Runtime, str]:
    """A runtime with the example refund agent, and a done run of it (`refund_run`)."""
    rt = make_runtime([refund_agent], notifier=notifier)
    return rt, await refund_run(rt)
