"""Four worker processes and an approver on one PostgreSQL database, workers SIGKILLed at
random and restarted: every run finishes, every charge, refund and e-mail happens once, and
no approval is decided twice."""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import asyncpg
import pytest

from examples import world
from runtime import Runtime
from store import EffectStatus, RunStatus, open_store

HERE = Path(__file__).parent
RUNS = 200
WORKERS = 4
WITHIN = 50.0
"""Seconds the whole fleet has to finish every run."""


@pytest.fixture
def fleet_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("SIGNOFF_WORLD_DB", str(tmp_path / "world.db"))
    return {**os.environ, "SIGNOFF_WORLD_DB": str(tmp_path / "world.db")}


async def _create_runs(url: str) -> None:
    from examples import refund_agent

    async with open_store(url) as store:
        rt = Runtime(store, [refund_agent.agent], worker_id="creator")
        for i in range(1, RUNS + 1):
            await rt.create("refund-agent", f"Refund order {i}", run_id=f"order-{i}")


class Fleet:
    def __init__(self, url: str, env: dict[str, str], logs: Path) -> None:
        self.url, self.env, self.logs = url, env, logs
        self.workers: dict[int, subprocess.Popen[bytes]] = {}
        self.lives = Counter[int]()

    def start(self, slot: int) -> None:
        self.lives[slot] += 1
        with (self.logs / f"worker-{slot}-{self.lives[slot]}.log").open("wb") as log:
            self.workers[slot] = subprocess.Popen(
                [sys.executable, str(HERE / "fleet.py"), "worker", self.url, f"worker-{slot}"],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def kill(self, slot: int) -> None:
        self.workers[slot].kill()
        self.workers[slot].wait()

    def stop(self) -> None:
        for slot in self.workers:
            self.kill(slot)


def run_fleet(
    url: str, env: dict[str, str], logs: Path, rng: random.Random
) -> tuple[bool, int, str]:
    """Start the approver and the workers; SIGKILL a random worker every 0.1-0.6 s and start
    it again, until the approver is done or time is up. (done, kills, approver's output)."""
    fleet = Fleet(url, env, logs)
    approver = subprocess.Popen(
        [sys.executable, str(HERE / "fleet.py"), "approver", url, str(RUNS)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    kills = 0
    try:
        for slot in range(WORKERS):
            fleet.start(slot)
        deadline = time.monotonic() + WITHIN
        while approver.poll() is None and time.monotonic() < deadline:
            time.sleep(rng.uniform(0.1, 0.6))
            slot = rng.randrange(WORKERS)
            fleet.kill(slot)
            kills += 1
            fleet.start(slot)
        finished = approver.poll() == 0
    finally:
        fleet.stop()
        if approver.poll() is None:
            approver.kill()
        output = approver.communicate()[0].decode()
    return finished, kills, output


@pytest.mark.slow
async def test_four_workers_killed_at_random_do_every_effect_once(
    pg_url: str, fleet_env: dict[str, str], tmp_path: Path
) -> None:
    await _create_runs(pg_url)
    seed = int(os.environ.get("SIGNOFF_FLEET_SEED", time.time_ns() % 10**6))

    done, kills, output = await asyncio.to_thread(
        run_fleet, pg_url, fleet_env, tmp_path, random.Random(seed)
    )

    assert done, f"seed {seed}: not done in {WITHIN}s after {kills} kills\n{output[-3000:]}"
    assert kills >= 5, f"seed {seed}: only {kills} kills"
    await _check_every_effect_once(pg_url, seed)


async def _check_every_effect_once(url: str, seed: int) -> None:
    orders = {f"order-{i}": world.order(str(i)) for i in range(1, RUNS + 1)}
    payments = Counter((kind, ref) for kind, ref, _, _ in world.payments())
    wanted = Counter(("refund", o["order_id"]) for o in orders.values())
    wanted.update(("charge", o["invoice_id"]) for o in orders.values() if o["restocking_fee_cents"])
    assert payments == wanted, f"seed {seed}: payments {payments - wanted} {wanted - payments}"
    emails = Counter(recipient for recipient, _, _ in world.emails())
    assert emails == Counter(o["customer_email"] for o in orders.values()), f"seed {seed}"

    async with open_store(url, migrate=False) as store:
        runs = await store.list_runs(limit=RUNS + 1)
        assert Counter(r.status for r in runs) == {RunStatus.DONE: RUNS}, f"seed {seed}"
        approvals = await store.list_approvals(limit=10 * RUNS)
        assert Counter(a.run_id for a in approvals) == dict.fromkeys(orders, 1)
        assert {a.state.value for a in approvals} == {"approved"}
        for run_id in orders:
            effects = await store.list_effects(run_id)
            assert {e.status for e in effects} == {EffectStatus.COMPLETED}, f"{run_id}: {effects}"
    conn = await asyncpg.connect(url)
    try:
        decided = await conn.fetch(
            "SELECT subject_id, count(*) FROM outbox WHERE topic = 'approval_decided' "
            "GROUP BY subject_id HAVING count(*) <> 1"
        )
        decisions = await conn.fetchval(
            "SELECT count(*) FROM audit_events WHERE action = 'approval_approved'"
        )
    finally:
        await conn.close()
    assert not decided, f"seed {seed}: approvals decided more than once: {decided}"
    assert decisions == RUNS, f"seed {seed}: {decisions} decisions recorded for {RUNS} runs"
