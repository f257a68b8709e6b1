"""A tool that blocks the loop does not cost its run (issue 40.7): an `async def` tool
sleeps synchronously for twice the lease while a second worker, a real process, waits to
take over any lease that lapses. The lease is renewed from the keeper's thread meanwhile:
no takeover, no page, the tool runs once, and one warning names the tool and how long it
blocked the loop, with a metric."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from blocking_agents import exporter
from support.pg_support import fresh_schema_fixture

from runtime import Runtime
from store import RunStatus
from store import Store
from store import open_store

HERE = Path(__file__).parent
FOLLOWER = HERE / "workers" / "follow_worker.py"
TTL = 1.5
BLOCK = 3.2  # past two leases: without the keeper, the second worker takes the run over


class Blocked:
    """The telemetry of worker A: what blocked its loop, and for how long."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, float]] = []

    def model_step(self, *args: Any) -> None: ...
    def effect_ended(self, *args: Any) -> None: ...
    def leases_taken_over(self, count: int) -> None: ...
    def shadow_decision(self, *args: Any) -> None: ...

    def loop_blocked(self, tool: str, seconds: float) -> None:
        self.seen.append((tool, seconds))


@pytest.fixture
def marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "marker"
    folder.mkdir()
    monkeypatch.setenv("SIGNOFF_TEST_MARKER", str(folder))
    return folder


@pytest.fixture(params=["sqlite-file", "postgres"])
async def url(request: pytest.FixtureRequest, db_url: str) -> AsyncIterator[str]:
    """The test's database: a SQLite file, or a fresh PostgreSQL schema, migrated."""
    if request.param == "sqlite-file":
        yield db_url
        return
    async for fresh in fresh_schema_fixture("signoff_keeper"):
        await (await open_store(fresh)).close()  # migrated before both workers open it
        yield fresh


@pytest.fixture
def follower(url: str, marker: Path) -> Any:
    """Worker B, following lapsed leases on the test's database until told to stop."""
    path = os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=path)
    process = subprocess.Popen(
        [sys.executable, str(FOLLOWER), url, str(TTL)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready", process.stderr.read()
    yield process
    if process.poll() is None:
        process.kill()
        process.wait()


async def test_a_tool_that_blocks_the_loop_keeps_its_lease_and_is_named(
    url: str, marker: Path, follower: subprocess.Popen[str], caplog: pytest.LogCaptureFixture
) -> None:
    async with open_store(url) as store:
        telemetry = Blocked()
        rt = Runtime(store, [exporter], worker_id="worker-a", lease_ttl=TTL, telemetry=telemetry)
        with caplog.at_level(logging.WARNING, logger="signoff"):
            run_id = await rt.start("exporter", f"Export for {BLOCK} s")
        run = await rt.get(run_id)
        pages = await store.list_pages(open_only=False)
        events = [e.action for e in await store.list_events(run_id=run_id)]
    (marker / "stop").write_text("the run ended")
    out, err = follower.communicate(timeout=30)

    assert (run.status, run.stop_reason) == (RunStatus.DONE, "answered")
    assert (marker / "ran").read_text().splitlines() == [str(os.getpid())]  # once, here
    assert json.loads(out.splitlines()[-1]) == {"taken_over": 0, "recovered": []}, err
    assert pages == []
    assert "late_result" not in events
    [warned] = [r for r in caplog.records if getattr(r, "event", None) == "loop_blocked"]
    said = warned.getMessage()
    assert said.startswith("tool export_report blocked the event loop for "), said
    blocked = float(said.split(" for ")[1].split("s ")[0])
    assert BLOCK - 1.0 <= blocked <= BLOCK + 1.0
    [(tool, seconds)] = telemetry.seen
    assert tool == "export_report"
    assert seconds == pytest.approx(blocked, abs=0.05)
    assert not [r for r in caplog.records if "lease" in r.getMessage() and r is not warned]


async def test_a_loop_blocked_briefly_is_not_worth_a_warning(
    store: Store, marker: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Under a third of the lease, renewals on the loop are on time: nothing to say."""
    telemetry = Blocked()
    rt = Runtime(store, [exporter], worker_id="w", lease_ttl=TTL, telemetry=telemetry)
    with caplog.at_level(logging.WARNING, logger="signoff"):
        run_id = await rt.start("exporter", "Export for 0.2 s")

    assert (await rt.get(run_id)).status == RunStatus.DONE
    assert telemetry.seen == []
    assert not [r for r in caplog.records if getattr(r, "event", None) == "loop_blocked"]
