"""A tool's result fields a policy marks `sensitive_results` are masked on every surface
that shows a result, and kept whole in the store. `signoff serve` runs as a real process
against the local fake Slack; a run of the card issuer (whose tool returns a virtual card's
number) is approved with a signed click; then each surface is read the way its users read
it: signed `/runs` commands, HTTP requests, the CLI as a subprocess, an audit export file."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import SUPPORT
from support.helpers import SIGNOFF
from support.result_agents import CARD_NUMBER
from support.slack_harness import APPROVALS
from support.slack_harness import BOB
from support.slack_harness import FakeSlackProcess
from support.slack_harness import SlackServer
from support.slack_harness import card_click
from support.slack_harness import slash
from support.slack_served import serving

from store import open_store
from store.records import AuditEvent

# one worker runs the module, so its one finished run (a server and the fake Slack) is built once
pytestmark = pytest.mark.xdist_group("result-masking")
RUN = "issue-1"
MASK = "[sensitive]"
POLICY = f"""
[policies.tools.issue_card]
channel = "{APPROVALS}"
approvers = ["{BOB}"]
sensitive_results = ["card_number"]
"""


@dataclass
class Finished:
    folder: Path
    server: SlackServer
    fake: FakeSlackProcess
    call_id: str


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Finished]:
    """One run of the card issuer, approved in Slack, finished: the card was issued."""
    folder = tmp_path_factory.mktemp("masking")
    extra = {
        "SIGNOFF_AGENTS": "result_agents:card_issuer",
        "PYTHONPATH": os.pathsep.join([str(SUPPORT), os.environ.get("PYTHONPATH", "")]),
    }
    with serving(folder, extra=extra, policy=POLICY) as (server, fake):
        server.start_run(RUN, "Issue a card for B7", agent="card-issuer", accepted=(201,))
        card = server.wait_until(lambda: [c for c in fake.cards() if RUN in json.dumps(c)])[0]
        clicked = server.slack(card_click("approve", card, user=BOB))
        assert clicked[0] == 200, clicked
        server.wait_until(lambda: server.run(RUN)["status"] == "done")
        call_id = server.run(RUN)["calls"][0]["call_id"]
        yield Finished(folder, server, fake, call_id)


def test_the_store_keeps_the_result_whole_for_the_model(finished: Finished) -> None:
    with closing(sqlite3.connect(finished.folder / "signoff.db")) as conn:
        (result,) = conn.execute("SELECT result FROM effects WHERE run_id = ?", (RUN,)).fetchone()
        messages = [row[0] for row in conn.execute("SELECT messages FROM checkpoints")]
    assert json.loads(result)["card"]["card_number"] == CARD_NUMBER
    # the transcript the model is given on every later step (and replay) has it whole
    assert any(CARD_NUMBER in text for text in messages)


def test_slack_cards_threads_and_runs_commands_never_show_it(finished: Finished) -> None:
    server, fake = finished.server, finished.fake
    answers = [server.slack(slash(f"{what} {RUN}", user=BOB)) for what in ("status", "history")]
    assert all(status == 200 for status, _, _ in answers)
    shown = {
        "messages and threads": json.dumps(fake._get("messages")),
        "ephemerals": json.dumps(fake.ephemerals()),
        "views": json.dumps(fake.views()),
        "/runs answers": " ".join(body.decode() for _, body, _ in answers),
    }
    assert RUN in shown["ephemerals"] + shown["/runs answers"]  # /runs did answer about it
    for surface, text in shown.items():
        assert CARD_NUMBER not in text, f"the card number appears in Slack's {surface}"


def test_the_http_api_and_the_console_mask_it(finished: Finished) -> None:
    server = finished.server
    answers = {
        path: server.api("GET", path)
        for path in (f"/v1/runs/{RUN}", f"/v1/console/runs/{RUN}", f"/v1/audit?run_id={RUN}")
    }
    for path, (status, body) in answers.items():
        assert status == 200, (path, body)
        assert CARD_NUMBER not in json.dumps(body), f"the card number appears in GET {path}"
    console = answers[f"/v1/console/runs/{RUN}"][1]
    calls = [call for row in console["timeline"] for call in row["calls"]]
    (issued,) = [call for call in calls if call["tool"] == "issue_card"]
    # the rest of the result still reads, in the transcript and in the ledger
    assert json.loads(issued["result"]) == {
        "order_id": "B7",
        "card": {"card_number": MASK, "expires": "12/29"},
    }
    assert issued["effect"]["result"]["card"] == {"card_number": MASK, "expires": "12/29"}


def test_the_cli_masks_it_in_runs_show_and_history(finished: Finished) -> None:
    folder = finished.folder
    shown = {
        "runs show": cli(folder, "runs", "show", RUN),
        "runs show --json": cli(folder, "runs", "show", RUN, "--json"),
        "runs history": cli(folder, "runs", "history", RUN),
        "runs history --json": cli(folder, "runs", "history", RUN, "--json"),
    }
    for command, text in shown.items():
        assert CARD_NUMBER not in text, f"the card number appears in `signoff {command}`"
    effects = json.loads(shown["runs show --json"])["effects"]
    assert effects[0]["result"]["card"]["card_number"] == MASK
    assert "issue_card completed" in shown["runs show"]  # its table names the effect
    history = json.loads(shown["runs history --json"])
    results = [m["content"] for cp in history for m in cp["messages"] if m["role"] == "tool"]
    assert [json.loads(text)["card"]["card_number"] for text in results] == [MASK]


def test_the_audit_export_file_masks_a_result_an_event_carries(finished: Finished) -> None:
    """The event a worker fenced off the run writes with what its tool returned (the one
    audit event that carries a result), exported to a file."""
    late = AuditEvent(
        action="late_result",
        actor="worker-lost-its-lease",
        run_id=RUN,
        detail={
            "call_id": finished.call_id,
            "status": "completed",
            "result": {"order_id": "B7", "card": {"card_number": CARD_NUMBER}},
        },
    )

    async def record() -> None:
        async with open_store(f"sqlite:///{finished.folder / 'signoff.db'}") as store:
            await store.record_event(late)

    asyncio.run(record())
    for kind in ("jsonl", "csv"):
        exported = finished.folder / f"audit.{kind}"
        cli(finished.folder, "audit", "export", "--format", kind, "-o", str(exported))
        text = exported.read_text()
        assert "late_result" in text
        assert MASK in text
        assert CARD_NUMBER not in text, f"the card number appears in the {kind} export"
    status, body = finished.server.api("GET", f"/v1/audit?run_id={RUN}")
    assert status == 200
    assert CARD_NUMBER not in json.dumps(body)
    assert MASK in json.dumps([e for e in body["events"] if e["action"] == "late_result"])


def cli(folder: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SIGNOFF_", "SLACK_"))}
    env["SIGNOFF_DATABASE_URL"] = f"sqlite:///{folder / 'signoff.db'}"
    done = subprocess.run(
        [SIGNOFF, *args], cwd=folder, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr
