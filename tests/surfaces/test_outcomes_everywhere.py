"""One outcome, said the same everywhere (issue 40.1): against a real `signoff serve`, the local
fake Slack and requests signed as Slack signs them, a refund declined in Slack and a
`delete_customer` approved in Slack that raised (the CRM answered 503) each end with the
vocabulary's word, never a check mark: in the card's thread, on the card, on the requester's
Home, in `/runs status` and `/runs list`, in `signoff runs show` and `runs list`, in the
console and in the API. The tool's exception is logged once, with its traceback."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from support import SUPPORT
from support.helpers import SIGNOFF
from support.helpers import run_text
from support.run_outcomes import CHECK
from support.run_outcomes import card_saying
from support.run_outcomes import first_card
from support.run_outcomes import thread_note
from support.slack_harness import APPROVALS
from support.slack_harness import BOB
from support.slack_harness import POLICY
from support.slack_harness import REQUESTER
from support.slack_harness import FakeSlackProcess
from support.slack_harness import SlackServer
from support.slack_harness import approval_id_of
from support.slack_harness import button
from support.slack_harness import card_click
from support.slack_harness import environment
from support.slack_harness import open_home
from support.slack_harness import slash
from support.slack_harness import start_server
from support.slack_harness import submission

AGENTS = {
    "SIGNOFF_AGENTS": "examples.refund_agent:agent,outcome_agents:crm",
    "PYTHONPATH": os.pathsep.join([str(SUPPORT), os.environ.get("PYTHONPATH", "")]),
}
CRM_POLICY = f"""
[policies.tools.delete_customer]
channel = "{APPROVALS}"
approvers = ["{BOB}"]
"""
DECLINED, FAILED = "refund-declined", "delete-failed"
REASON = "not eligible"


@pytest.fixture
def server(tmp_path: Path, world: Path, fake: FakeSlackProcess) -> Any:
    with start_server(
        tmp_path, world, fake.base_url, extra=AGENTS, policy=POLICY + CRM_POLICY
    ) as running:
        yield running


def test_a_declined_run_and_a_run_whose_tool_raised_read_so_on_every_surface(
    tmp_path: Path, world: Path, fake: FakeSlackProcess, server: SlackServer
) -> None:
    declined_card = decline_a_refund(fake, server)
    failed_card = approve_a_delete_that_raises(fake, server)

    for run_id, card, outcome in (
        (DECLINED, declined_card, "declined"),
        (FAILED, failed_card, "failed"),
    ):
        note = thread_note(fake, server, card, run_id)
        assert f"ended at step {server.run(run_id)['step']}: {outcome}" in note, note
        assert CHECK not in note
        # the card says it as the thread does
        server.wait_until(lambda card=card, note=note: card_saying(fake, card, note))
    declined_note = thread_note(fake, server, declined_card, DECLINED)
    assert f"declined by <@{BOB}>: {REASON}" in declined_note
    failed_note = thread_note(fake, server, failed_card, FAILED)
    assert "CrmUnavailable: the CRM answered 503 Service Unavailable for customer 7" in (
        failed_note.replace("\u2060", "")
    )

    home = requester_home(fake, server)
    assert ":no_entry_sign: run declined" in home
    assert ":x: run failed" in home
    assert CHECK not in home

    status = slack_command(server, f"status {DECLINED}") + slack_command(server, f"status {FAILED}")
    listed = slack_command(server, "list")
    for said in (status, listed):
        assert "declined" in said
        assert "failed (a tool failed)" in said
    assert "CrmUnavailable" in status

    env = environment(tmp_path, world, 0, fake.base_url) | AGENTS
    for args in ((DECLINED,), (FAILED,)):
        shown_cli = run_text([SIGNOFF, "runs", "show", *args], cwd=tmp_path, env=env)
        assert shown_cli.returncode == 0, shown_cli.stderr
        assert ("declined" if args[0] == DECLINED else "failed (a tool failed)") in shown_cli.stdout
    assert "CrmUnavailable" in shown_cli.stdout
    listed_cli = run_text([SIGNOFF, "runs", "list"], cwd=tmp_path, env=env)
    assert "declined" in listed_cli.stdout
    assert "failed (a tool failed)" in listed_cli.stdout

    for run_id, outcome in ((DECLINED, "declined"), (FAILED, "failed")):
        view = server.run(run_id)
        assert (view["status"], view["outcome"]) == ("done", outcome)
        assert view["ended"].startswith(f"Run {run_id!r} ended at step")
        status_code, console = server.api("GET", f"/v1/console/runs/{run_id}")
        assert status_code == 200, console
        assert console["run"]["outcome"] == outcome
        assert console["run"]["label"] in ("declined", "failed (a tool failed)")
        assert console["timeline"][-1]["outcome"] == outcome
    _, listed_api = server.api("GET", "/v1/runs")
    assert {r["id"]: r["outcome"] for r in listed_api["runs"]} == {
        DECLINED: "declined",
        FAILED: "failed",
    }
    assert view["error"] == (
        "delete_customer: CrmUnavailable: the CRM answered 503 Service Unavailable for customer 7"
    )
    [call] = [
        c for row in console["timeline"] for c in row["calls"] if c["tool"] == "delete_customer"
    ]
    assert call["effect"]["state"] == "failed"
    assert call["effect"]["error"].startswith("CrmUnavailable: the CRM answered 503")

    log = server.log.read_text()
    assert log.count("Traceback (most recent call last)") == 1  # logged once, with it
    assert f"tool delete_customer raised in run {FAILED}" in log
    assert 'raise CrmUnavailable(f"the CRM answered 503' in log


def test_runs_start_exits_3_and_says_failed_when_a_tool_it_called_raised(
    tmp_path: Path, world: Path
) -> None:
    env = environment(tmp_path, world, 0, "http://127.0.0.1:9/api/") | AGENTS
    args = [SIGNOFF, "runs", "start", "crm-agent", "Find customer 7", "--run-id", "find-7"]
    started = run_text(args, cwd=tmp_path, env=env)

    assert started.returncode == 3, started.stderr  # the run failed; the command did its work
    assert "failed (a tool failed)" in started.stdout
    assert "find_customer: CrmUnavailable: the CRM answered 503" in started.stderr


def decline_a_refund(fake: FakeSlackProcess, server: SlackServer) -> dict[str, Any]:
    """Start a refund and decline its card with a reason, as Bob; the card."""
    server.start_run(DECLINED)
    card = server.wait_until(lambda: first_card(fake, DECLINED))
    status, _, _ = server.slack(card_click("decline", card, user=BOB))
    assert status == 200
    server.wait_until(fake.modals)
    approval = approval_id_of(card)
    status, body, _ = server.slack(
        submission("decline_reason", approval, {"reason": REASON}, user=BOB)
    )
    assert status == 200, body
    server.wait_until(lambda: server.run(DECLINED)["status"] == "done")
    return card


def approve_a_delete_that_raises(fake: FakeSlackProcess, server: SlackServer) -> dict[str, Any]:
    """Start the CRM agent on customer 7 and approve its `delete_customer`; the card."""
    server.start_run(FAILED, "Delete customer 7", agent="crm-agent")
    card = server.wait_until(lambda: first_card(fake, FAILED))
    status, _, _ = server.slack(button("approve", approval_id_of(card), user=BOB, ts=card["ts"]))
    assert status == 200
    server.wait_until(lambda: server.run(FAILED)["status"] == "done")
    return card


def requester_home(fake: FakeSlackProcess, server: SlackServer) -> str:
    """The requester's Home once both their requests say how their runs ended."""
    open_home(server, REQUESTER)

    def home() -> str | None:
        published = [v for v in fake.views() if v["method"] == "views.publish"]
        mine = [v["view"] for v in published if v["user_id"] == REQUESTER]
        text = json.dumps(mine[-1]["blocks"], ensure_ascii=False) if mine else ""
        return text if "run declined" in text and "run failed" in text else None

    return str(server.wait_until(home))


def slack_command(server: SlackServer, text: str) -> str:
    status, body, _ = server.slack(slash(text, user=BOB))
    assert status == 200, body
    return json.dumps(json.loads(body), ensure_ascii=False).replace("\u2060", "")
