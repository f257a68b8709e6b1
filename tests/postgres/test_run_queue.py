"""The run queue across real `signoff serve` processes on one PostgreSQL database: runs
started at one worker's API are driven by every worker with room, never more at once than
a worker's capacity; a frozen worker's runs are finished by the others, each step once; and
a notification wakes an idle worker long before its poll would."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
import urllib.request
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.helpers import SIGNOFF
from support.helpers import TOKEN
from support.helpers import free_port
from support.pg_support import migrate
from support.serve_workers import wait_healthy

from runtime import Runtime
from store import RunStatus
from store import open_store

asyncpg = pytest.importorskip("asyncpg")

HERE = Path(__file__).parent
UP_WITHIN = 30.0


class Worker:
    def __init__(self, name: str, env: dict[str, str], logs: Path) -> None:
        self.name, self.port = name, free_port()
        env = env | {"SIGNOFF_WORKER_ID": name, "SIGNOFF_PORT": str(self.port)}
        with (logs / f"{name}.log").open("wb") as log:
            self.process = subprocess.Popen(
                [SIGNOFF, "serve"], env=env, cwd=logs, stdout=log, stderr=subprocess.STDOUT
            )
        self.log = logs / f"{name}.log"

    def wait_up(self) -> None:
        wait_healthy(self.name, self.process, self.port, self.log, UP_WITHIN)

    def start_run(self, run_id: str) -> None:
        body = json.dumps({"agent": "queue-agent", "task": f"task {run_id}", "run_id": run_id})
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/v1/runs", data=body.encode(), method="POST"
        )
        request.add_header("Authorization", f"Bearer {TOKEN}")
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 201

    def metric(self, name: str) -> float:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as got:
            for line in got.read().decode().splitlines():
                if line.startswith(f"{name} "):
                    return float(line.split()[1])
        raise AssertionError(f"no metric {name}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.kill()
        self.process.wait()


@pytest.fixture
def serve_env(pg_url: str, tmp_path: Path) -> dict[str, str]:
    migrate(pg_url)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SIGNOFF_", "SLACK_"))}
    return env | {
        "SIGNOFF_DATABASE_URL": pg_url,
        "SIGNOFF_API_ONLY": "true",
        "SIGNOFF_API_TOKEN": TOKEN,
        "SIGNOFF_HOST": "127.0.0.1",
        "SIGNOFF_AGENTS": "queue_agent:agent",
        "PYTHONPATH": os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")]),
        "SIGNOFF_QUEUE_LOG": str(tmp_path / "calls.jsonl"),
    }


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for worker in started:
        worker.stop()


def calls(env: dict[str, str]) -> list[dict[str, object]]:
    path = Path(env["SIGNOFF_QUEUE_LOG"])
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def busy_worker(
    env: dict[str, str], tmp_path: Path, workers: list[Worker], count: int
) -> tuple[Worker, list[str]]:
    """worker-a, up, with `count` runs started whose tool calls have all begun (within 30 s);
    the runs' ids."""
    worker = Worker("worker-a", env, tmp_path)
    workers.append(worker)
    worker.wait_up()
    runs = [f"run-{i}" for i in range(count)]
    for run_id in runs:
        worker.start_run(run_id)
    deadline = time.monotonic() + 30
    while len({c["run"] for c in calls(env)}) < len(runs) and time.monotonic() < deadline:
        time.sleep(0.05)
    return worker, runs


async def statuses(url: str) -> dict[str, RunStatus]:
    async with open_store(url, migrate=False) as store:
        return {run.id: run.status for run in await store.list_runs(limit=1000)}


def wait_done(url: str, runs: int, within: float) -> dict[str, RunStatus]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        found = asyncio.run(statuses(url))
        if len(found) == runs and set(found.values()) == {RunStatus.DONE}:
            return found
        time.sleep(0.2)
    return found


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    edges = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    now = peak = 0
    for _, change in edges:
        now += change
        peak = max(peak, now)
    return peak


@pytest.mark.slow
def test_runs_started_at_one_worker_are_driven_by_both_never_past_their_capacity(
    pg_url: str, serve_env: dict[str, str], workers: list[Worker], tmp_path: Path
) -> None:
    env = serve_env | {"SIGNOFF_WORKER_CAPACITY": "2", "SIGNOFF_QUEUE_STEP_SECONDS": "0.1"}
    workers += [Worker("worker-a", env, tmp_path), Worker("worker-b", env, tmp_path)]
    for worker in workers:
        worker.wait_up()
    runs = [f"run-{i}" for i in range(12)]

    for run_id in runs:
        workers[0].start_run(run_id)
    done = wait_done(pg_url, len(runs), within=90)

    assert done == dict.fromkeys(runs, RunStatus.DONE), done
    spans: dict[str, dict[str, tuple[float, float]]] = defaultdict(dict)
    for call in calls(env):
        worker, run, start, end = call["worker"], call["run"], call["start"], call["end"]
        assert isinstance(worker, str)
        assert isinstance(run, str)
        assert isinstance(start, float)
        assert isinstance(end, float)
        first, last = spans[worker].get(run, (start, end))
        spans[worker][run] = (min(first, start), max(last, end))
    assert set(spans) == {"worker-a", "worker-b"}, {w: sorted(r) for w, r in spans.items()}
    for worker, by_run in spans.items():
        assert most_at_once(list(by_run.values())) <= 2, (worker, by_run)
    claims = sum(worker.metric("signoff_worker_runs_claimed_total") for worker in workers)
    assert claims == len(runs)
    assert workers[0].metric("signoff_worker_capacity") == 2


@pytest.mark.slow
def test_a_frozen_workers_runs_are_finished_by_the_other_each_step_once(
    pg_url: str, serve_env: dict[str, str], workers: list[Worker], tmp_path: Path
) -> None:
    env = serve_env | {
        "SIGNOFF_LEASE_TTL": "2",
        "SIGNOFF_QUEUE_STEPS": "8",
        "SIGNOFF_QUEUE_STEP_SECONDS": "0.2",
        "SIGNOFF_WORKER_CAPACITY": "4",
    }
    frozen, runs = busy_worker(env, tmp_path, workers, 4)
    frozen.process.send_signal(signal.SIGSTOP)  # mid-flight, holding every run's lease
    other = Worker("worker-b", env, tmp_path)
    workers.append(other)
    other.wait_up()

    done = wait_done(pg_url, len(runs), within=60)
    frozen.process.send_signal(signal.SIGCONT)  # it wakes up late: its writes are fenced off
    time.sleep(1.5)
    after = asyncio.run(_history(pg_url, runs))

    assert done == dict.fromkeys(runs, RunStatus.DONE), done
    assert {c["worker"] for c in calls(env)} == {"worker-a", "worker-b"}
    assert other.metric("signoff_lease_takeovers_total") == len(runs)  # each a lapsed lease
    for run_id, (tool_results, seqs, effects) in after.items():
        assert tool_results == [f"k{i}" for i in range(8)], run_id
        assert seqs == list(range(len(seqs))), run_id
        assert len(effects) == len(set(effects)) == 8, (run_id, effects)
    assert asyncio.run(_history(pg_url, runs)) == after


async def _history(url: str, runs: list[str]) -> dict[str, tuple[list[str], list[int], list[str]]]:
    out = {}
    async with open_store(url, migrate=False) as store:
        for run_id in runs:
            state = await store.load_state(run_id)
            results = [json.loads(m.content or "{}").get("key") for m in state.messages
                       if m.role == "tool"]  # fmt: skip
            seqs = [cp.seq for cp in await store.history(run_id)]
            effects = [e.call_id for e in await store.list_effects(run_id)]
            out[run_id] = (results, seqs, effects)
    return out


@pytest.mark.slow
def test_a_notification_wakes_an_idle_worker_long_before_its_poll(
    pg_url: str, serve_env: dict[str, str], workers: list[Worker], tmp_path: Path
) -> None:
    poll = 60.0
    env = serve_env | {"SIGNOFF_WORKER_POLL_SECONDS": str(poll), "SIGNOFF_LEASE_TTL": "60"}
    idle = Worker("worker-b", env, tmp_path)
    workers.append(idle)
    idle.wait_up()
    time.sleep(1.0)  # its start-up pass is over: only a notification (or the poll) wakes it

    started = time.monotonic()
    asyncio.run(_create(pg_url))  # another process: no API call reaches the worker
    while not calls(env) and time.monotonic() - started < poll:
        time.sleep(0.02)
    woke = time.monotonic() - started

    assert calls(env), "the run was never started"
    assert calls(env)[0]["worker"] == "worker-b"
    assert woke < poll / 10, f"the idle worker took {woke:.1f}s to start the run"


async def _create(url: str) -> None:
    from tests.postgres.queue_agent import agent

    async with open_store(url, migrate=False) as store:
        await Runtime(store, [agent], worker_id="creator").create("queue-agent", "wake up")


@pytest.mark.slow
def test_a_stopping_workers_runs_go_on_at_once_on_the_other(
    pg_url: str, serve_env: dict[str, str], workers: list[Worker], tmp_path: Path
) -> None:
    """SIGTERM mid-flight: the stopping worker gives its runs back to the queue and wakes the
    others, so they go on long before a lease would lapse or a poll would find them."""
    poll = lease = 120.0
    steps = 40
    env = serve_env | {
        "SIGNOFF_WORKER_POLL_SECONDS": str(poll),
        "SIGNOFF_LEASE_TTL": str(lease),
        "SIGNOFF_QUEUE_STEPS": str(steps),
        "SIGNOFF_QUEUE_STEP_SECONDS": "0.25",
    }
    stopping, runs = busy_worker(env, tmp_path, workers, 3)
    other = Worker("worker-b", env, tmp_path)
    workers.append(other)
    other.wait_up()  # its start-up pass finds every run leased: only a wake-up moves them
    unfinished = {r for r, status in asyncio.run(statuses(pg_url)).items() if status != "done"}

    stopping.process.send_signal(signal.SIGTERM)
    assert stopping.process.wait(timeout=30) == 0
    done = wait_done(pg_url, len(runs), within=lease / 4)  # a lease outlives the stop by 2/3 of it

    assert unfinished, "every run ended before the worker stopped: nothing was handed over"
    assert done == dict.fromkeys(runs, RunStatus.DONE), done
    after = asyncio.run(_history(pg_url, runs))
    for run_id, (tool_results, seqs, _) in after.items():
        assert tool_results == [f"k{i}" for i in range(steps)], run_id
        assert seqs == list(range(len(seqs))), run_id
    assert {c["run"] for c in calls(env) if c["worker"] == "worker-b"} == unfinished
