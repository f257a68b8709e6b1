"""A read effect's result is stored once, in the transcript (issue 46), and every surface still
shows it: `signoff serve` runs as a real process against the local fake Slack; the refund
agent's order lookup (a read) completes and the run waits on its refund's approval. The
ledger's row keeps only where the result is; the console's timeline and `signoff runs show`
(the CLI as a subprocess) show the lookup's result as the tool returned it."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.helpers import SIGNOFF
from support.slack_harness import SlackServer
from support.slack_served import serving

# one worker runs the module, so its one waiting run (a server and the fake Slack) is built once
pytestmark = pytest.mark.xdist_group("read-result-once")
RUN = "lookup-1"
ORDER = "4471"


@dataclass
class Waiting:
    folder: Path
    server: SlackServer


@pytest.fixture(scope="module")
def waiting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Waiting]:
    """A refund run that looked its order up and waits on the refund's approval."""
    folder = tmp_path_factory.mktemp("read-once")
    with serving(folder) as (server, _):
        server.start_run(RUN, f"Refund order {ORDER}")
        server.wait_until(lambda: server.run(RUN)["status"] == "waiting_approval")
        yield Waiting(folder, server)


def test_the_ledger_keeps_where_the_result_is_not_a_copy(waiting: Waiting) -> None:
    with closing(sqlite3.connect(waiting.folder / "signoff.db")) as conn:
        row = conn.execute(
            "SELECT result, result_seq FROM effects WHERE run_id = ? AND tool = 'lookup_order'",
            (RUN,),
        ).fetchone()
        (messages,) = conn.execute(
            "SELECT messages FROM checkpoints WHERE run_id = ? AND seq = ?", (RUN, row[1])
        ).fetchone()
    assert row[0] is None
    tool = [m for m in json.loads(messages) if m["role"] == "tool"]
    assert [m["name"] for m in tool] == ["lookup_order"]
    assert json.loads(tool[0]["content"])["order_id"] == ORDER


def test_the_console_timeline_shows_the_lookups_result(waiting: Waiting) -> None:
    status, console = waiting.server.api("GET", f"/v1/console/runs/{RUN}")
    assert status == 200, console
    calls = [c for row in console["timeline"] for c in row["calls"]]
    (lookup,) = [c for c in calls if c["tool"] == "lookup_order"]
    assert lookup["effect"]["state"] == "completed"
    assert lookup["effect"]["result"] == json.loads(lookup["result"])  # the ledger's, the model's
    assert lookup["effect"]["result"]["order_id"] == ORDER


def test_runs_show_shows_the_lookups_result(waiting: Waiting) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SIGNOFF_", "SLACK_"))}
    env["SIGNOFF_DATABASE_URL"] = f"sqlite:///{waiting.folder / 'signoff.db'}"
    shown = {}
    for flags in ((), ("--json",)):
        done = subprocess.run(
            [SIGNOFF, "runs", "show", RUN, *flags],
            cwd=waiting.folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        shown[flags] = done.stdout
    (lookup,) = [
        e for e in json.loads(shown[("--json",)])["effects"] if e["tool"] == "lookup_order"
    ]
    assert lookup["status"] == "completed"
    assert lookup["result"]["order_id"] == ORDER
    history = _history(waiting)
    assert lookup["result"] == history  # as the transcript's tool message has it
    assert "lookup_order completed" in shown[()]  # its table names the effect


def _history(waiting: Waiting) -> Any:
    _, run = waiting.server.api("GET", f"/v1/console/runs/{RUN}")
    calls = [c for row in run["timeline"] for c in row["calls"] if c["tool"] == "lookup_order"]
    return json.loads(calls[0]["result"])
