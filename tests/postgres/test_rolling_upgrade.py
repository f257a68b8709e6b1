"""Rolling upgrades on one PostgreSQL database with real `signoff serve` processes: a worker of
this release serves while a newer release (this code plus a test's migration from the
future, `support.future_schema`) starts beside it and migrates.

- A safe migration: the older worker steps aside at once (its runs mid-step go back to the
  queue untouched, its writes answer 503 with Retry-After, its reads go on, one log line says
  to replace it), and the newer worker finishes every run: each effect once, none failed.
- An unsafe one: refused, changing nothing, while the older worker holds leases (by
  `db migrate` and by the newer `serve` alike, naming the worker); stopped first, then
  migrated, every run finishes the same way.

New runs go through both releases; every decision through the newer one.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from support.future_schema import known_with_future
from support.helpers import SIGNOFF
from support.helpers import TOKEN
from support.helpers import clean_env
from support.helpers import free_port
from support.pg_support import migrate

from examples import world
from runtime.runs.aside import release
from store import RunStatus
from store import migration
from store import open_store

asyncpg = pytest.importorskip("asyncpg")

HERE = Path(__file__).parent
UP_WITHIN = 60.0  # a loaded machine starts a process slowly
WITHIN = 60.0
REQUESTER, APPROVER = "U0REQ", "U0BOB"
PARKED, MID_STEP, LATER = (101, 102, 103), (201, 202, 203), (301, 302, 303)
"""Orders started at the older worker and parked before the migration, started there and
mid-step when it lands, and started at the newer worker after it."""
ORDERS = PARKED + MID_STEP + LATER
STEP_ASIDE = "replace this worker"


class Server:
    """A `signoff serve` of one release, logging JSON lines to a file of its own."""

    def __init__(self, name: str, env: dict[str, str], logs: Path) -> None:
        self.name, self.port = name, free_port()
        self.log = logs / f"{name}-{self.port}.log"
        env = env | {"SIGNOFF_WORKER_ID": name, "SIGNOFF_PORT": str(self.port)}
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                [SIGNOFF, "serve"], env=env, cwd=logs, stdout=out, stderr=subprocess.STDOUT
            )

    def wait_up(self) -> None:
        wait(lambda: self.api("GET", "/healthz")[0] == 200, UP_WITHIN, self)

    def api(self, method: str, path: str, body: Any = None) -> tuple[int, dict[str, str], Any]:
        assert self.process.poll() is None, self.text()[-3000:]
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data, method=method)
        request.add_header("Authorization", f"Bearer {TOKEN}")
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, dict(response.headers), json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers), json.loads(exc.read() or b"null")
        except OSError:
            return 0, {}, None

    def start_runs(self, orders: tuple[int, ...]) -> None:
        for order in orders:
            run = {"agent": "refund-agent", "task": f"Refund order {order}"}
            run |= {"run_id": f"order-{order}", "requested_by": REQUESTER}
            status, _, view = self.api("POST", "/v1/runs", run)
            assert status == 201, view

    def lines(self) -> list[dict[str, Any]]:
        """Its JSON log lines."""
        return [json.loads(line) for line in self.text().splitlines() if line.startswith("{")]

    def text(self) -> str:
        return self.log.read_text("utf-8", errors="replace")

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=30)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


def wait(check: Callable[[], object], within: float, server: Server | None = None) -> Any:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.05)
    raise AssertionError(
        f"not within {within}s" + (f":\n{server.text()[-3000:]}" if server else "")
    )


@pytest.fixture
def env(pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """What both releases share: the migrated database, the world, the model's log. This
    process reads the database as the newer release does (before and after it migrates)."""
    migrate(pg_url)
    monkeypatch.setattr(migration, "migrations", known_with_future(safe=True))
    world_db = tmp_path / "world.db"
    monkeypatch.setenv("SIGNOFF_WORLD_DB", str(world_db))  # the test reads the world too
    support = HERE.parent / "support"
    path = os.pathsep.join([str(HERE), str(support), os.environ.get("PYTHONPATH", "")])
    return clean_env("SIGNOFF_", "SLACK_") | {
        "SIGNOFF_DATABASE_URL": pg_url,
        "SIGNOFF_API_ONLY": "true",
        "SIGNOFF_API_TOKEN": TOKEN,
        "SIGNOFF_HOST": "127.0.0.1",
        "SIGNOFF_AGENTS": "upgrade_agent:agent",
        "SIGNOFF_LOG_FORMAT": "json",
        "SIGNOFF_WORLD_DB": str(world_db),
        "SIGNOFF_UPGRADE_LOG": str(tmp_path / "model.jsonl"),
        "PYTHONPATH": path,
    }


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    started: list[Server] = []

    def start(name: str, env: dict[str, str], *, up: bool = True) -> Server:
        server = Server(name, env, tmp_path)
        started.append(server)
        if up:
            server.wait_up()
        return server

    yield start
    for server in started:
        server.kill()


async def _statuses(url: str) -> dict[str, RunStatus]:
    async with open_store(url, migrate=False) as store:
        return {run.id: run.status for run in await store.list_runs(limit=100)}


async def _schema_version(url: str) -> int:
    async with open_store(url, migrate=False) as store:
        return await store.schema_version()


def model_calls(env: dict[str, str]) -> list[dict[str, Any]]:
    path = Path(env["SIGNOFF_UPGRADE_LOG"])
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def run_ids(orders: tuple[int, ...]) -> list[str]:
    return [f"order-{order}" for order in orders]


def parked(url: str, orders: tuple[int, ...]) -> bool:
    found = asyncio.run(_statuses(url))
    return all(found.get(run) == RunStatus.WAITING_APPROVAL for run in run_ids(orders))


def waiting_at_the_gate(env: dict[str, str], orders: tuple[int, ...], worker: str) -> bool:
    """Each of these orders has a model call `worker` was asked and has not answered."""
    calls = Counter((c["task"], c["event"]) for c in model_calls(env) if c["worker"] == worker)
    tasks = [f"Refund order {order}" for order in orders]
    return all(calls[(t, "asked")] > calls[(t, "answered")] for t in tasks)


def decide_until_done(url: str, server: Server) -> dict[str, RunStatus]:
    """Approve, through `server`, whatever is pending, until every run is done (or WITHIN)."""
    deadline = time.monotonic() + WITHIN
    while time.monotonic() < deadline:
        _, _, pending = server.api("GET", "/v1/approvals?state=pending")
        for approval in pending["approvals"]:
            decision = {"decision": "approved", "by": APPROVER}
            status, _, answer = server.api(
                "POST", f"/v1/approvals/{approval['id']}/decision", decision
            )
            assert status in (200, 409), answer
        found = asyncio.run(_statuses(url))
        if len(found) == len(ORDERS) and set(found.values()) == {RunStatus.DONE}:
            return found
        time.sleep(0.1)
    return asyncio.run(_statuses(url))


async def check_every_effect_once(url: str) -> None:
    """Every run done, each approved once, each refund, charge and e-mail made once."""
    orders = [world.order(str(order)) for order in ORDERS]
    payments = Counter((kind, ref) for kind, ref, _, _ in world.payments())
    wanted = Counter(("refund", o["order_id"]) for o in orders)
    wanted.update(("charge", o["invoice_id"]) for o in orders if o["restocking_fee_cents"])
    assert payments == wanted
    emails = Counter(recipient for recipient, _, _ in world.emails())
    assert emails == Counter(o["customer_email"] for o in orders)
    async with open_store(url, migrate=False) as store:
        runs = await store.list_runs(limit=100)
        assert Counter(run.status for run in runs) == {RunStatus.DONE: len(ORDERS)}
        approvals = await store.list_approvals(limit=100)
        assert Counter(a.run_id for a in approvals) == dict.fromkeys(run_ids(ORDERS), 1)
        assert {a.state.value for a in approvals} == {"approved"}
        assert await store.list_pages(open_only=False) == []


def stepped_aside_at(server: Server) -> tuple[float, str]:
    """When the worker said it steps aside, and what (it says it once; `/readyz` says why it is
    not ready in its own line)."""
    said = [line for line in server.lines() if line["logger"] == "signoff.upgrade"]
    assert len(said) == 1, said
    return datetime.fromisoformat(said[0]["time"]).timestamp(), said[0]["message"]


@pytest.fixture
def older(
    pg_url: str, env: dict[str, str], servers: Callable[..., Server], tmp_path: Path
) -> Server:
    """The worker of this release, up, with the PARKED orders parked on their approvals and
    the MID_STEP ones mid-step (each model call waits for a gate file, which is gone): it
    holds their leases."""
    gate = tmp_path / "gate"
    older = servers("worker-old", env | {"SIGNOFF_UPGRADE_GATE": str(gate)})
    gate.touch()
    older.start_runs(PARKED)
    wait(lambda: parked(pg_url, PARKED), WITHIN, older)
    gate.unlink()
    older.start_runs(MID_STEP)
    wait(lambda: waiting_at_the_gate(env, MID_STEP, "worker-old"), WITHIN, older)
    return older


@pytest.mark.slow
def test_an_older_worker_steps_aside_for_a_safe_migration_and_every_run_finishes_once(
    pg_url: str, env: dict[str, str], servers: Callable[..., Server], older: Server
) -> None:
    known = asyncio.run(_schema_version(pg_url))

    newer = servers("worker-new", env | {"SIGNOFF_UPGRADE_FUTURE": "safe"})
    wait(lambda: STEP_ASIDE in older.text(), 30, older)  # at once, but the machine may be loaded
    refused = older.api("POST", "/v1/runs", {"agent": "refund-agent", "task": "Refund order 9"})
    read = older.api("GET", "/v1/runs/order-101")
    ready = older.api("GET", "/readyz")
    newer.start_runs(LATER)
    done = decide_until_done(pg_url, newer)

    assert done == dict.fromkeys(run_ids(ORDERS), RunStatus.DONE), done
    asyncio.run(check_every_effect_once(pg_url))
    assert asyncio.run(_schema_version(pg_url)) == known + 1
    at, said = stepped_aside_at(older)
    assert said == (
        f"this worker runs Signoff {release()} for schema {known}; the database is at "
        f"{known + 1}: {STEP_ASIDE}"
    )
    assert refused[0] == 503
    assert refused[1]["Retry-After"] == "30"
    assert refused[2]["kind"] == "SchemaTooNew"
    assert (read[0], read[2]["id"]) == (200, "order-101")
    assert ready[0] == 503
    assert "schema" in ready[2]["failing"]
    calls = model_calls(env)
    older_calls = [c for c in calls if c["worker"] == "worker-old"]
    assert not [c for c in older_calls if c["event"] == "answered" and c["at"] > at]
    for order in MID_STEP:  # handed back mid-step, its step never written: the newer asked again
        task = f"Refund order {order}"
        by_older = Counter(c["event"] for c in older_calls if c["task"] == task)
        assert by_older == {"asked": 1}, (task, by_older)
        assert any(c["task"] == task and c["worker"] == "worker-new" for c in calls)


@pytest.mark.slow
def test_an_unsafe_migration_waits_until_the_older_worker_stops_and_every_run_finishes_once(
    pg_url: str, env: dict[str, str], servers: Callable[..., Server], older: Server
) -> None:
    known = asyncio.run(_schema_version(pg_url))
    newer_env = env | {"SIGNOFF_UPGRADE_FUTURE": "unsafe"}

    migrate = newer_migrate(newer_env)
    refused_start = servers("worker-new", newer_env, up=False)
    refused_start.process.wait(timeout=UP_WITHIN)
    unchanged = asyncio.run(_schema_version(pg_url))
    assert older.stop() == 0  # the procedure: stop the older workers (their runs go back) ...
    migrated = newer_migrate(newer_env)  # ... migrate ...
    newer = servers("worker-new", newer_env)  # ... start the newer release
    newer.start_runs(LATER)
    done = decide_until_done(pg_url, newer)

    holder = f"worker-old (schema {known}, {len(MID_STEP)} runs)"
    assert migrate.returncode == 1, migrate.stdout
    assert f"{known + 1:04d} from_the_future is not safe while older workers run" in migrate.stderr
    assert holder in migrate.stderr
    assert refused_start.process.returncode != 0
    assert holder in refused_start.text()
    assert unchanged == known
    assert migrated.returncode == 0, migrated.stderr
    assert migrated.stdout.splitlines() == [
        f"applied {known + 1:04d} from_the_future: NOT safe while older workers run "
        "(A test's migration from the future.)",
        f"schema version {known + 1} (was {known})",
    ]
    assert done == dict.fromkeys(run_ids(ORDERS), RunStatus.DONE), done
    asyncio.run(check_every_effect_once(pg_url))
    assert STEP_ASIDE not in older.text()  # stopped first: nothing to step aside from


def newer_migrate(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`signoff db migrate` of the newer release."""
    command = [sys.executable, str(HERE / "newer_cli.py"), "db", "migrate"]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)
