"""Several processes on one PostgreSQL database: one decision wins, migrations apply once."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import UTC
from datetime import datetime
from pathlib import Path

import pytest

from store import Approval
from store import migration
from store import open_store

HERE = Path(__file__).parent
DECIDERS = 50


async def _spawn(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, *args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


@pytest.mark.slow
async def test_fifty_processes_decide_one_approval_and_exactly_one_wins(pg_url: str) -> None:
    async with open_store(pg_url) as store:
        approval = Approval(
            id="appr-contested", tool="issue_refund", args={}, created_at=datetime.now(UTC)
        )
        await store.create_approval(approval)
    worker = str(HERE / "decide_worker.py")
    procs = [await _spawn(worker, pg_url, approval.id, f"U{i:03d}") for i in range(DECIDERS)]
    for proc in procs:  # every process connected and waiting before any decides
        assert proc.stdout is not None
        assert (await asyncio.wait_for(proc.stdout.readline(), 60)).strip() == b"ready"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write(b"go\n")
    outputs = [await asyncio.wait_for(proc.communicate(), 60) for proc in procs]

    results = [out.decode().strip() for out, _ in outputs]
    assert all(proc.returncode == 0 for proc in procs), [err.decode() for _, err in outputs]
    winners = [i for i, result in enumerate(results) if result == "won"]
    assert len(winners) == 1, results
    assert sorted(set(results) - {"won"}) == ["lost AlreadyDecided"]
    async with open_store(pg_url) as store:
        decided = await store.get_approval(approval.id)
        backlog, _ = await store.outbox_backlog()
    assert decided.decided_by == f"U{winners[0]:03d}"
    assert backlog == 2  # requested, decided: one announcement of the one decision


@pytest.mark.slow
async def test_signoff_db_migrate_from_two_processes_at_once_applies_each_migration_once(
    pg_url: str, tmp_path: Path
) -> None:
    signoff = str(Path(sys.executable).with_name("signoff"))
    env = {**os.environ, "SIGNOFF_DATABASE_URL": pg_url}
    procs = [
        await asyncio.create_subprocess_exec(
            signoff,
            "db",
            "migrate",
            "--json",
            env=env,
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    outputs = [await asyncio.wait_for(proc.communicate(), 60) for proc in procs]

    assert all(proc.returncode == 0 for proc in procs), [err.decode() for _, err in outputs]
    latest = migration.latest_version("postgres")
    reports = sorted((json.loads(out) for out, _ in outputs), key=lambda r: r["was"])
    assert [(r["was"], r["version"]) for r in reports] == [(0, latest), (latest, latest)]
    assert [len(r["applied"]) for r in reports] == [latest, 0]  # each migration named once
    async with open_store(pg_url, migrate=False) as store:
        assert await store.schema_version() == latest
