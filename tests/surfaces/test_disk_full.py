"""A full disk: writes fail as one clear error (`DiskFull`; the API 503 with JSON naming it),
reads go on, nothing a failed write reported is half there, and once space is freed the same
process writes again without a restart, on a database that passes `PRAGMA integrity_check`.

The database lives on a 2 MiB tmpfs mounted for the test (root only; skipped, saying why,
where mounting is not permitted), which a filler file fills to the last byte."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from pathlib import Path

import pytest
from aiohttp.test_utils import make_mocked_request
from support.helpers import AUTH
from support.helpers import Api

from bot.health import Readiness
from runtime.queries import Queries
from store import Checkpoint
from store import Message
from store import Run
from store import Store
from store import errors
from surfaces.api.test_api import REFUND
from surfaces.api.test_api import post


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        reason = mounted.stderr.strip() or f"exit {mounted.returncode}"
        pytest.skip(f"needs to mount a 2 MiB tmpfs (root, mount permitted): {reason}")
    try:
        yield mount
    finally:
        if subprocess.run(["umount", str(mount)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(mount)], check=True)


@pytest.fixture
def db_path(disk: Path) -> Path:  # the e2e store, runtime and API use it
    return disk / "signoff.db"


def fill(disk: Path) -> Path:
    """A file that takes every free byte of the disk."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        for size in (64 * 1024, 4096, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
    finally:
        os.close(fd)
    return filler


def new_run(run_id: str) -> tuple[Run, Checkpoint]:
    at = datetime.now(UTC)
    words = Message(role="user", content=f"{run_id}: " + "lorem ipsum " * 300)
    run = Run(id=run_id, agent="refund-agent", task=f"task {run_id}", lineage_id=run_id)
    return run, Checkpoint.opening(run_id, [words], created_at=at)


async def exists(store: Store, run_id: str) -> bool:
    try:
        await store.get_run(run_id)
    except errors.NotFound:
        return False
    return True


async def test_a_full_disk_refuses_writes_clearly_serves_reads_and_recovers_by_itself(
    api: Api, store: Store, disk: Path, db_path: Path
) -> None:
    status, _ = await post(api, "/v1/runs", REFUND | {"run_id": "before"})
    assert status == 201
    await api.parked("before")
    created: list[str] = []
    for n in range(20):  # history in the WAL, as in the report
        run, snapshot = new_run(f"early-{n}")
        await store.create_run(run, snapshot)
        created.append(run.id)

    filler = fill(disk)
    refused: list[str] = []
    reasons: set[str] = set()
    for n in range(200):  # the WAL may have room left in blocks it already holds
        run, snapshot = new_run(f"full-{n}")
        try:
            await store.create_run(run, snapshot)
        except errors.DiskFull as exc:
            reasons.add(str(exc))
            refused.append(run.id)
            if len(refused) >= 3:
                break
        else:
            created.append(run.id)
    assert len(refused) >= 3, "the writes never ran out of space"
    assert reasons == {"the database's disk is full: nothing was written; free space and retry"}

    # The API: a write 503 with JSON naming DiskFull; reads answer.
    response = await api.client.post(
        "/v1/approvals", json={"tool": "x", "approval_id": "ap-full"}, headers=AUTH
    )
    assert response.status == 503
    assert response.content_type == "application/json"
    answer = await response.json()
    assert answer["kind"] == "DiskFull"
    assert "disk is full" in answer["error"]
    status, seen = await post(api, "/v1/runs", REFUND | {"run_id": "during"})
    assert status == 503
    assert seen["kind"] == "DiskFull"
    read = await api.client.get("/v1/runs/before", headers=AUTH)
    assert read.status == 200
    assert (await read.json())["status"] == "waiting_approval"
    assert len(await store.list_runs(None, limit=1000)) == len(created) + 1

    # Space comes back: the same store and API write again, no restart.
    filler.unlink()
    run, snapshot = new_run("after")
    await store.create_run(run, snapshot)
    created.append(run.id)
    status, answer = await post(api, "/v1/approvals", {"tool": "x", "approval_id": "ap-after"})
    assert status == 201, answer

    for run_id in created:
        assert await exists(store, run_id), run_id
        assert [cp.seq for cp in await store.history(run_id)] == [0]
    for run_id in [*refused, "during"]:
        assert not await exists(store, run_id), f"{run_id} was reported failed yet exists"
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        orphans = conn.execute(
            "SELECT count(*) FROM checkpoints WHERE run_id NOT IN (SELECT id FROM runs)"
        ).fetchone()
        assert orphans == (0,)
        failed = [*refused, "during"]
        marks = ", ".join("?" * len(failed))
        left = conn.execute(f"SELECT count(*) FROM checkpoints WHERE run_id IN ({marks})", failed)
        assert left.fetchone() == (0,)
    conn.close()


async def test_readyz_reports_a_full_disk_and_recovers_once_space_is_freed(
    store: Store, disk: Path
) -> None:
    readiness = Readiness(Queries(store), {"scheduler": lambda: True})

    async def probe() -> tuple[int, object]:
        answer = await readiness.readyz(make_mocked_request("GET", "/readyz"))
        return answer.status, json.loads(answer.body)

    assert await probe() == (200, {"ready": True})
    filler = fill(disk)
    refused = 0
    for n in range(200):
        run, snapshot = new_run(f"probe-{n}")
        try:
            await store.create_run(run, snapshot)
        except errors.DiskFull:
            refused += 1
            break
    assert refused == 1, "the writes never ran out of space"
    assert await probe() == (503, {"ready": False, "failing": ["disk"]})
    assert "disk full" in (await readiness.failing())["disk"]

    filler.unlink()
    assert await probe() == (200, {"ready": True})
    run, snapshot = new_run("after-space")
    await store.create_run(run, snapshot)
    assert await probe() == (200, {"ready": True})


async def test_a_claim_on_a_full_disk_takes_no_run_and_the_queue_goes_on_once_freed(
    store: Store, disk: Path
) -> None:
    """The run queue's claim on a full disk: refused whole (every run it did not report
    claimed is still ready, no lease on it), and once space is back the same store claims
    each of them once."""
    queued = []
    for n in range(20):
        run, snapshot = new_run(f"queued-{n}")
        await store.create_run(run, snapshot)
        queued.append(run.id)
    filler = fill(disk)
    for n in range(200):  # use up what room the WAL still holds
        try:
            await store.create_run(*new_run(f"full-{n}"))
        except errors.DiskFull:
            break
    now = datetime.now(UTC)
    until = now + timedelta(seconds=60)

    claimed: list[str] = []
    refusals = 0
    for _ in range(5):
        try:
            claimed += [
                c.run_id for c in await store.claim_runs("W1", limit=2, until=until, now=now)
            ]
        except errors.DiskFull:
            refusals += 1
    assert refusals >= 1, "no claim ran out of space"
    waiting = [run_id for run_id in queued if run_id not in claimed]
    assert (await store.ready_runs())[0] == len(waiting)
    for run_id in waiting:
        assert (await store.get_run(run_id)).lease_owner is None, run_id

    filler.unlink()
    rest = await store.claim_runs("W2", limit=100, until=until, now=now)

    assert sorted(c.run_id for c in rest) == sorted(waiting)
    assert await store.claim_runs("W3", limit=100, until=until, now=now) == []
