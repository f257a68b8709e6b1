"""A `signoff serve` killed (SIGKILL) in the middle of a cool-off (issue 42.6), on one SQLite
file: it neither ran the call early, nor does the next `signoff serve` lose it or run it
twice; the seat provider's own log counts what ran."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
import urllib.request
from contextlib import closing
from pathlib import Path

from support import SUPPORT
from support.helpers import SIGNOFF
from support.helpers import TOKEN
from support.helpers import clean_env
from support.helpers import free_port
from support.helpers import run_text

COOL_OFF = 10.0
CONFIG = f"""\
agents = ["cool_off_agents:seat_agent"]
[policies.default]
approvers = ["U0BOB"]
[policies.tools.hold_seat]
cool_off = "{COOL_OFF:g}s"
"""


def status(db: Path) -> tuple[str, str | None]:
    """The seat run's status and its approval's cool-off, read as another process would."""
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        (run,) = conn.execute("SELECT status FROM runs").fetchone()
        (cool,) = conn.execute("SELECT cool_off FROM approvals").fetchone()
    return run, cool


def serve(folder: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    port = free_port()
    with (folder / f"serve-{port}.log").open("wb") as log:  # the child keeps its own copy
        process = subprocess.Popen(
            [SIGNOFF, "serve"],
            cwd=folder,
            env=env | {"SIGNOFF_PORT": str(port)},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    ends = time.monotonic() + 60
    while time.monotonic() < ends:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1):
                return process
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise AssertionError("signoff serve did not start")


def test_a_serve_killed_in_the_cool_off_neither_runs_it_early_nor_loses_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "signoff.toml").write_text(CONFIG, "utf-8")
    seats, db = tmp_path / "seats.log", tmp_path / "signoff.db"
    env = clean_env("SIGNOFF_", "SLACK_") | {
        "SIGNOFF_DATABASE_URL": f"sqlite:///{db}",
        "SIGNOFF_TEST_SEATS": str(seats),
        "SIGNOFF_API_TOKEN": TOKEN,
        "SIGNOFF_API_ONLY": "1",
        "SIGNOFF_HOST": "127.0.0.1",
        "PYTHONPATH": os.pathsep.join([str(SUPPORT), os.environ.get("PYTHONPATH", "")]),
    }
    start = run_text(
        [SIGNOFF, "runs", "start", "seat-agent", "Hold 12A", "--requested-by", "U0RILEY"],
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert start.returncode == 0, start.stderr
    with closing(sqlite3.connect(db)) as conn:
        (approval_id,) = conn.execute("SELECT id FROM approvals").fetchone()
    decided_at = time.monotonic()
    decide = [SIGNOFF, "approvals", "decide", approval_id, "approve", "--by", "U0BOB"]
    assert run_text(decide, cwd=tmp_path, env=env, timeout=120).returncode == 0
    assert status(db) == ("waiting_approval", "waiting")

    first = serve(tmp_path, env)  # recovers, arms the cool-off's end, then dies
    time.sleep(1.0)
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    assert time.monotonic() - decided_at < COOL_OFF, "too slow to kill it inside the cool-off"
    assert not seats.exists()  # not run early
    assert status(db) == ("waiting_approval", "waiting")

    second = serve(tmp_path, env)
    try:
        ends = time.monotonic() + 90
        while status(db)[0] != "done" and time.monotonic() < ends:
            time.sleep(0.2)
        assert time.monotonic() - decided_at >= COOL_OFF
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(timeout=30)
    assert status(db) == ("done", "ran")
    assert seats.read_text().splitlines() == ["hold 12A"]  # not lost, not twice
