"""Every benchmark still runs: each script, at its smallest size, exits 0 and prints its
table. (A benchmark is not run by anything else, so a change of schema or API would leave it
broken until someone needed its figures.) The figures themselves are not judged here."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest
from support.helpers import run_text
from support.pg_support import HAVE_ASYNCPG
from support.pg_support import POSTGRES_URL

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
HAVE_PEERS = all(importlib.util.find_spec(m) for m in ("langgraph", "dbos"))

SMALLEST = {
    "runtime_bench.py": (["--rounds", "1", "--runs", "2", "--steps", "3"], "bytes/step"),
    "load_bench.py": (["--rounds", "1", "--steps", "10"], "load latest"),
    "store_bench.py": ([], "bytes/step"),
    "step_profile.py": (["--runs", "2", "--steps", "3"], "ms of CPU per step"),
    "workers_bench.py": (
        ["--runs", "4", "--steps", "3", "--workers", "1", "2", "--rounds", "1"],
        "2 worker(s)",
    ),
    "rules_bench.py": (["--rounds", "1", "--runs", "2", "--calls", "10"], "no rule matches"),
    "limits_bench.py": (
        ["--history", "2000", "--calls", "2", "--rounds", "1", "--backend", "sqlite"],
        "three limits add per gated call",
    ),
    "metrics_bench.py": (["--small", "10", "--factor", "2", "--rounds", "2"], "large / small"),
    "approvals_bench.py": (["--runs", "5", "--pending", "100"], "RSS growth"),
    "backtest_bench.py": (["--events", "400", "--rounds", "1"], "per new approval"),
    "cli_bench.py": (  # this tree against itself
        ["--rounds", "1", "--runs", "2", "--top", "1", "--stages", "--against", str(ROOT)],
        "where runs list's CPU goes",
    ),
    "modal_bench.py": (["--events", "400", "--rounds", "1"], "views.open"),
    "ab_bench.py": (  # this tree against itself
        ["--old", str(ROOT), "--rounds", "1", "--runs", "2", "--steps", "3"],
        "this / old, steps/s",
    ),
    "freeze_soak.py": (["--seconds", "2"], "0 duplicate effects"),
    "resume_bench.py": (["--runs", "3", "--rounds", "1"], "p99, median of rounds"),
    "slack_soak_bench.py": (  # hung posts land past the settle time (2.25 s), not 8-14 s
        ["--backlog", "5", "--phases", "1", "--per-phase", "2", "--late", "2.5", "3"],
        "per card",
    ),
    "proof_bench.py": (
        ["--rounds", "1", "--decisions", "20", "--events", "20", "--sink-events", "50"],
        "per decision",
    ),
}


def run_benchmark(script: str, args: list[str], tmp_path: Path) -> str:
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(BENCHMARKS), str(ROOT)])}
    done = run_text(
        [sys.executable, str(BENCHMARKS / script), *args], cwd=tmp_path, env=env, timeout=180
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.parametrize("script", sorted(SMALLEST))
def test_the_benchmark_runs(script: str, tmp_path: Path) -> None:
    args, expected = SMALLEST[script]
    assert expected in run_benchmark(script, args, tmp_path)


@pytest.mark.skipif(not HAVE_ASYNCPG, reason="needs asyncpg (the postgres extra)")
def test_the_postgres_benchmark_runs(tmp_path: Path) -> None:
    args = ["--url", POSTGRES_URL, "--rounds", "1", "--runs", "2", "--steps", "3"]
    out = run_benchmark(
        "postgres_bench.py", [*args, "--workers", "1", "--decisions", "3"], tmp_path
    )
    assert "decision in one process" in out


@pytest.mark.skipif(not HAVE_ASYNCPG, reason="needs asyncpg (the postgres extra)")
def test_the_resume_benchmark_runs_through_notify(tmp_path: Path) -> None:
    args = ["--url", POSTGRES_URL, "--runs", "3", "--rounds", "1", "--poll", "60"]
    out = run_benchmark("resume_bench.py", args, tmp_path)
    assert "postgres: 3 decisions at once" in out


@pytest.mark.parametrize("system", ["floor", "floor_two_commits", "signoff_read", "signoff_record"])
def test_each_of_signoffs_measurements_against_its_peers_runs(system: str, tmp_path: Path) -> None:
    args = ["--one", system, "--path", str(tmp_path / "x.db"), "--runs", "2", "--steps", "3"]
    assert '"ms_per_step"' in run_benchmark("peers.py", args, tmp_path)


@pytest.mark.skipif(not HAVE_ASYNCPG, reason="needs asyncpg (the postgres extra)")
@pytest.mark.parametrize(
    ("script", "expected"),
    [("pg_cost.py", "ceiling on"), ("round_trips.py", "per step"), ("fleet_bench.py", "x one")],
)
def test_the_postgres_cost_benchmarks_run(script: str, expected: str, tmp_path: Path) -> None:
    args = ["--url", POSTGRES_URL, "--steps", "3"]
    if script == "pg_cost.py":
        args += ["--runs", "2", "--rounds", "1"]
    if script == "fleet_bench.py":
        args += ["--runs", "4", "--rounds", "1", "--workers", "1", "2"]
    assert expected in run_benchmark(script, args, tmp_path)


@pytest.mark.skipif(not HAVE_ASYNCPG, reason="needs asyncpg (the postgres extra)")
def test_the_history_benchmark_runs(tmp_path: Path) -> None:
    args = ["--runs", "20", "--rounds", "1", "--steps", "3", "--url", POSTGRES_URL]
    out = run_benchmark("history_bench.py", args, tmp_path)
    assert "x empty" in out
    assert "210 checkpoints" in out  # 20 clones and the template, ten each


@pytest.mark.skipif(not HAVE_ASYNCPG, reason="needs asyncpg (the postgres extra)")
@pytest.mark.parametrize("system", ["pg_floor", "pg_signoff_read", "pg_signoff_record"])
def test_each_of_signoffs_postgres_measurements_runs(system: str, tmp_path: Path) -> None:
    args = ["--one", system, "--postgres", POSTGRES_URL, "--runs", "2", "--steps", "3"]
    assert '"ms_per_step"' in run_benchmark("peers.py", args, tmp_path)


@pytest.mark.skipif(not HAVE_PEERS, reason="needs LangGraph and DBOS (the bench extra)")
@pytest.mark.parametrize("system", ["langgraph", "dbos"])
def test_each_peer_runs(system: str, tmp_path: Path) -> None:
    args = ["--one", system, "--path", str(tmp_path / "x.db"), "--runs", "2", "--steps", "3"]
    assert '"ms_per_step"' in run_benchmark("peers.py", args, tmp_path)


@pytest.mark.skipif(not (HAVE_PEERS and HAVE_ASYNCPG), reason="needs DBOS and asyncpg")
def test_dbos_on_postgres_runs(tmp_path: Path) -> None:
    args = ["--one", "pg_dbos", "--postgres", POSTGRES_URL, "--runs", "2", "--steps", "3"]
    assert '"ms_per_step"' in run_benchmark("peers.py", args, tmp_path)
