"""Four `signoff serve` processes and an approver on one PostgreSQL database, servers
SIGKILLed at random and restarted: every run finishes, every charge, refund and e-mail
happens once, no approval is decided twice, and the fake Slack got each card once."""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
from support.helpers import SIGNOFF
from support.helpers import free_port
from support.slack_harness import FakeSlackProcess
from support.slack_harness import approval_id_of
from support.slack_harness import environment

from examples import world
from runtime import Runtime
from store import EffectStatus
from store import RunStatus
from store import open_store

asyncpg = pytest.importorskip("asyncpg")

HERE = Path(__file__).parent
RUNS = 100
WORKERS = 4
WITHIN = 50.0
DRAIN_WITHIN = 60.0  # after the last kill: the servers left deliver what is still queued
"""Seconds the whole fleet has to finish every run and send every Slack message."""
KILL_EVERY = (0.5, 1.5)
"""A server is SIGKILLed every so many seconds (uniformly at random) after the last one it
killed serves again: a loaded machine slows the kills down rather than starving the fleet."""
UP_WITHIN = 30.0
MIN_KILLS = 5


@pytest.fixture
def fleet_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pg_url: str, fake: FakeSlackProcess
) -> dict[str, str]:
    """What every `signoff serve` of the fleet shares: the database, the world, the fake
    Slack, short leases. Outbox claims stay long: a killed server comes back under its own
    id and releases its claims at once, and a claim that lapses under a sender stalled
    longer than it (this machine is loaded) lets a second sender post the same card."""
    world_db = tmp_path / "world.db"
    monkeypatch.setenv("SIGNOFF_WORLD_DB", str(world_db))
    return environment(tmp_path, world_db, 0, fake.base_url) | {
        "SIGNOFF_DATABASE_URL": pg_url,
        "SIGNOFF_OUTBOX_CLAIM_SECONDS": "30",
        "SIGNOFF_LEASE_TTL": "3",
    }


async def _create_runs(url: str) -> None:
    from examples import refund_agent

    async with open_store(url) as store:
        rt = Runtime(store, [refund_agent.agent], worker_id="creator")
        for i in range(1, RUNS + 1):
            await rt.create("refund-agent", f"Refund order {i}", run_id=f"order-{i}")


class Fleet:
    """Four servers, each with a stable worker id (a restarted one reclaims its leases)."""

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.env, self.logs = env, logs
        self.workers: dict[int, subprocess.Popen[bytes]] = {}
        self.ports: dict[int, int] = {}
        self.lives = Counter[int]()

    def start(self, slot: int) -> None:
        self.lives[slot] += 1
        self.ports[slot] = free_port()
        env = self.env | {
            "SIGNOFF_WORKER_ID": f"worker-{slot}",
            "SIGNOFF_PORT": str(self.ports[slot]),
        }
        with (self.logs / f"worker-{slot}-{self.lives[slot]}.log").open("wb") as log:
            self.workers[slot] = subprocess.Popen(
                [SIGNOFF, "serve"], env=env, cwd=self.logs, stdout=log, stderr=subprocess.STDOUT
            )

    def wait_up(self, slot: int) -> None:
        """Until server `slot` answers /healthz (or died, or UP_WITHIN passed: the run's own
        deadline then tells)."""
        deadline = time.monotonic() + UP_WITHIN
        url = f"http://127.0.0.1:{self.ports[slot]}/healthz"
        while self.workers[slot].poll() is None and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(url, timeout=2):
                    return
            except (OSError, urllib.error.URLError):
                time.sleep(0.05)

    def kill(self, slot: int) -> None:
        self.workers[slot].kill()
        self.workers[slot].wait()

    def stop(self) -> None:
        for slot in self.workers:
            self.kill(slot)


def run_fleet(
    url: str, env: dict[str, str], logs: Path, rng: random.Random
) -> tuple[bool, int, str]:
    """Start the approver and the servers; SIGKILL a random server now and then and start it
    again, until the approver is done and the outbox is empty, or time is up.
    (done, kills, approver's output)."""
    fleet = Fleet(env, logs)
    approver = subprocess.Popen(
        [sys.executable, str(HERE / "fleet.py"), url, str(RUNS)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    kills = 0
    try:
        for slot in range(WORKERS):
            fleet.start(slot)
        for slot in range(WORKERS):
            fleet.wait_up(slot)
        deadline = time.monotonic() + WITHIN
        # kills go on while the last cards go out, until MIN_KILLS have landed
        while (approver.poll() is None or kills < MIN_KILLS) and time.monotonic() < deadline:
            time.sleep(rng.uniform(*KILL_EVERY))
            slot = rng.randrange(WORKERS)
            fleet.kill(slot)
            kills += 1
            fleet.start(slot)
            fleet.wait_up(slot)
        finished = approver.poll() == 0
        deadline = time.monotonic() + DRAIN_WITHIN  # no more kills: a slow machine only waits
        while finished and asyncio.run(_backlog(url)) and time.monotonic() < deadline:
            time.sleep(0.2)  # the servers still alive send what is left
        finished = finished and not asyncio.run(_backlog(url))
    finally:
        fleet.stop()
        if approver.poll() is None:
            approver.kill()
        output = approver.communicate()[0].decode()
    return finished, kills, output


@pytest.mark.slow
async def test_four_servers_killed_at_random_do_every_effect_and_post_every_card_once(
    pg_url: str, fleet_env: dict[str, str], fake: FakeSlackProcess, tmp_path: Path
) -> None:
    await _create_runs(pg_url)
    seed = int(os.environ.get("SIGNOFF_FLEET_SEED", time.time_ns() % 10**6))

    done, kills, output = await asyncio.to_thread(
        run_fleet, pg_url, fleet_env, tmp_path, random.Random(seed)
    )

    assert done, (
        f"seed {seed}: not done in {WITHIN}s (+{DRAIN_WITHIN}s to drain) after {kills} kills: "
        f"{await _where(pg_url)}\n"
        f"{output[-3000:]}"
    )
    assert kills >= MIN_KILLS, f"seed {seed}: only {kills} kills"
    await _check_every_effect_once(pg_url, seed)
    _check_slack(fake, seed, tmp_path)


async def _where(url: str) -> str:
    async with open_store(url, migrate=False) as store:
        runs = Counter(run.status.value for run in await store.list_runs(limit=RUNS + 1))
        return f"runs {dict(runs)}, outbox backlog {(await store.outbox_backlog())[0]}"


async def _backlog(url: str) -> int:
    async with open_store(url, migrate=False) as store:
        return (await store.outbox_backlog())[0]


def _check_slack(fake: FakeSlackProcess, seed: int, logs: Path) -> None:
    (logs / "slack-calls.json").write_text(json.dumps(fake.calls()))  # for a failure's post-mortem
    cards = Counter(approval_id_of(card) for card in fake.cards())
    assert len(cards) == RUNS, f"seed {seed}: {len(cards)} approval cards for {RUNS} runs"
    assert set(cards.values()) == {1}, f"seed {seed}: cards posted twice: {cards.most_common(3)}"
    posts = Counter(
        (c["args"].get("channel"), c["args"].get("thread_ts"), c["args"].get("text"))
        for c in fake.calls()
        if c["method"] == "chat.postMessage" and c["status"] == 200
    )
    twice = [post for post, n in posts.items() if n > 1]
    assert not twice, f"seed {seed}: messages posted twice: {twice[:3]}"


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
