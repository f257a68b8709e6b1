"""Cancel tells the truth on every surface (issue 26.4): against a real `signoff serve` (the
local fake Slack, requests signed as Slack signs them), three runs each have a tool in flight;
one is cancelled over the API, one with `signoff runs cancel`, one with `/runs cancel`, each
asking to compensate. All three answer the same words (the run's id aside), and once the tools
end each hold is given back exactly once, by the server that drives the runs."""

from __future__ import annotations

import json
import os
from pathlib import Path

from support import SUPPORT
from support.helpers import SIGNOFF
from support.helpers import run_text
from support.slack_harness import BOB
from support.slack_harness import FakeSlackProcess
from support.slack_harness import SlackServer
from support.slack_harness import environment
from support.slack_harness import slash
from support.slack_harness import start_server

HERE = SUPPORT


def agents_env(marker: Path) -> dict[str, str]:
    return {
        "SIGNOFF_AGENTS": "cancel_agents:booker",
        "SIGNOFF_TEST_MARKER": str(marker),
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    }


def test_api_cli_and_slack_say_the_same_words_while_a_tool_is_in_flight(
    tmp_path: Path, world: Path, fake: FakeSlackProcess
) -> None:
    marker = tmp_path / "marker"
    marker.mkdir()
    server = start_server(tmp_path, world, fake.base_url, extra=agents_env(marker))
    try:
        for run_id in ("api", "cli", "slack"):
            status, _ = server.api(
                "POST", "/v1/runs", {"agent": "booker", "task": f"Hold {run_id}", "run_id": run_id}
            )
            assert status == 201
        for room in ("api", "cli", "slack"):
            server.wait_until(lambda room=room: (marker / f"entered-{room}").exists())

        status, view = server.api("POST", "/v1/runs/api/cancel", {"compensate": True})
        assert status == 202, view
        env = environment(tmp_path, world, 0, fake.base_url) | agents_env(marker)
        cli = run_text(
            [SIGNOFF, "runs", "cancel", "cli", "--compensate", "--json"], cwd=tmp_path, env=env
        )
        assert cli.returncode == 0, cli.stderr
        status, body, _ = server.slack(slash("cancel slack compensate", user=BOB))
        assert status == 200, body
        slack_text = json.loads(body)["text"]

        words = view["note"].replace("Run api ", "Run {id} ")
        assert "hold (call_1_1) is still running" in words
        assert "then compensated if it is reversible" in words
        assert json.loads(cli.stdout)["note"] == words.format(id="cli")
        assert words.format(id="slack") in slack_text
        assert (marker / "undone").exists() is False  # nothing undone while the tools run

        (marker / "release").write_text("go")
        for run_id in ("api", "cli", "slack"):
            server.wait_until(lambda run_id=run_id: _compensated(server, run_id))
            assert server.run(run_id)["status"] == "cancelled"
        assert sorted((marker / "undone").read_text().split()) == ["api", "cli", "slack"]
    finally:
        assert server.stop() == 0
    assert "Traceback" not in server.log.read_text()


def _compensated(server: SlackServer, run_id: str) -> bool:
    """The run's saga recorded the in-flight call as compensated (audit: `compensate`)."""
    status, audit = server.api("GET", f"/v1/audit?run_id={run_id}")
    assert status == 200, audit
    return any(
        e["action"] == "compensate" and e["detail"]["compensated"] == ["call_1_1"]
        for e in audit["events"]
    )
