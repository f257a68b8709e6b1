"""The on-call path through the real console script: a page, its resolution, the resume."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from support import SUPPORT
from support.helpers import SIGNOFF
from support.helpers import run_text


def signoff(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env |= {
        "SIGNOFF_DATABASE_URL": f"sqlite:///{tmp_path / 'signoff.db'}",
        "SIGNOFF_AGENTS": "cli_agents:shipper,examples.refund_agent:agent",
        "SIGNOFF_TEST_MARKER": str(tmp_path / "hung"),
        "SIGNOFF_WORLD_DB": str(tmp_path / "world.db"),
        "PYTHONPATH": os.pathsep.join([str(SUPPORT), env.get("PYTHONPATH", "")]),
    }
    return run_text([SIGNOFF, *args], cwd=tmp_path, env=env)


def test_an_effect_in_doubt_is_paged_resolved_and_the_run_resumed(tmp_path: Path) -> None:
    started = signoff(tmp_path, "runs", "start", "shipper", "Ship p1", "--run-id", "s1", "--json")
    assert json.loads(started.stdout)["stop_reason"] == "in_doubt", started.stderr
    assert started.returncode == 3  # the run failed; the command did its work
    assert "run s1 failed (an effect is in doubt): " in started.stderr
    [page] = json.loads(signoff(tmp_path, "pages", "list", "--json").stdout)
    assert (page["run_id"], page["reason"]) == ("s1", "in_doubt")
    history = signoff(tmp_path, "runs", "history", "s1", "--json").stdout

    too_soon = signoff(tmp_path, "runs", "resume", "s1")
    assert too_soon.returncode == 1
    assert "in doubt" in too_soon.stderr
    assert f"signoff runs resolve s1 {page['call_id']}" in too_soon.stderr
    assert signoff(tmp_path, "runs", "history", "s1", "--json").stdout == history

    resolved = signoff(
        tmp_path, "runs", "resolve", "s1", page["call_id"], "--did-not-happen", "--by", "U0ONCALL"
    )
    assert resolved.returncode == 0, resolved.stderr
    assert "signoff runs resume s1" in resolved.stdout
    assert json.loads(signoff(tmp_path, "pages", "list", "--json").stdout) == []

    resuming = signoff(tmp_path, "runs", "resume", "s1", "--json")
    resumed = json.loads(resuming.stdout)
    # The model says "Shipped.", but the shipment did not happen: the run failed (issue 40.1).
    assert (resumed["status"], resumed["outcome"]) == ("done", "failed")
    assert resumed["error"] == "ship: did not happen, according to U0ONCALL"
    assert resuming.returncode == 3, resuming.stderr


def test_start_says_how_to_decide_and_decide_says_what_the_run_did(tmp_path: Path) -> None:
    started = signoff(
        tmp_path, "runs", "start", "refund-agent", "Refund order 7", "--requested-by", "U0REQ"
    )
    assert started.returncode == 0, started.stderr
    [command] = [
        line.strip()
        for line in started.stdout.splitlines()
        if "decide" in line and line.strip().startswith("signoff")
    ]
    approval_id = command.split()[3]

    decided = signoff(tmp_path, "approvals", "decide", approval_id, "approve", "--by", "U0BOSS")

    assert decided.returncode == 0, decided.stderr
    assert "is now done at step" in decided.stdout


def test_a_page_is_acknowledged_once(tmp_path: Path) -> None:
    signoff(tmp_path, "runs", "start", "shipper", "Ship p1", "--run-id", "s2")
    [page] = json.loads(signoff(tmp_path, "pages", "list", "--json").stdout)

    first = signoff(tmp_path, "pages", "ack", page["id"], "--by", "U0ONCALL")
    second = signoff(tmp_path, "pages", "ack", page["id"], "--by", "U0OTHER")

    assert first.returncode == 0, first.stderr
    assert second.returncode == 1
    assert second.stderr.strip().startswith("error: U0ONCALL already acknowledged this page")
    assert "U0ONCALL" in second.stderr
