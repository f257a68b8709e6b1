"""Who may read a run with `/runs`, over real signed slash commands to `signoff serve`: its
requester, its policy's approvers and on-call, the configured readers (users, user groups,
channels); anyone else gets one line and nothing of the run."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.helpers import TOKEN
from support.slack_harness import ANN
from support.slack_harness import APPROVALS
from support.slack_harness import BOB
from support.slack_harness import EVE
from support.slack_harness import REQUESTER
from support.slack_harness import FakeSlackProcess
from support.slack_harness import SlackServer
from support.slack_harness import slash
from support.slack_harness import start_server

ONCALL_PERSON, AUDITOR, OPS = "U0ONCALL", "U0AUDIT", "C0OPS"
POLICY = f"""
[policies.tools.issue_refund]
channel = "{APPROVALS}"
approvers = ["{BOB}", "{ANN}"]
escalate_to = "{ONCALL_PERSON}"
"""
RUN = "order-read"


@pytest.fixture
def server(tmp_path: Path, world: Path, fake: FakeSlackProcess) -> Iterator[SlackServer]:
    extra = {"SIGNOFF_SLACK_READERS": f"{AUDITOR},{OPS}"}
    with start_server(tmp_path, world, fake.base_url, extra=extra, policy=POLICY) as running:
        running.start_run(RUN, "Refund order 4471 for jane@example.com")
        running.wait_until(lambda: fake.cards())
        yield running


def runs(server: SlackServer, text: str, user: str, channel: str = APPROVALS) -> dict[str, Any]:
    status, body, _ = server.slack(slash(text, user=user, channel=channel))
    assert status == 200, body
    return dict(json.loads(body))


def shown(reply: dict[str, Any]) -> str:
    return json.dumps(reply)


@pytest.mark.parametrize(
    ("user", "channel"),
    [
        (REQUESTER, APPROVALS),
        (BOB, APPROVALS),
        (ONCALL_PERSON, APPROVALS),
        (AUDITOR, APPROVALS),
        (EVE, OPS),
    ],
    ids=["requester", "approver", "on-call", "configured-user", "configured-channel"],
)
def test_those_who_may_read_a_run_see_it(server: SlackServer, user: str, channel: str) -> None:
    for verb in ("status", "history"):
        reply = runs(server, f"{verb} {RUN}", user, channel)
        assert RUN in shown(reply)
        assert "You may not read" not in shown(reply)
    assert RUN in shown(runs(server, "list", user, channel))


def test_anyone_else_gets_one_line_and_nothing_of_the_run(server: SlackServer) -> None:
    for verb in ("status", "history"):
        reply = runs(server, f"{verb} {RUN}", EVE)
        assert reply["response_type"] == "ephemeral"
        assert reply["text"].startswith(f"You may not read run {RUN}")
        assert "\n" not in reply["text"]
        assert "jane@example.com" not in shown(reply)
        assert "issue_refund" not in shown(reply)
    listed = runs(server, "list", EVE)
    assert RUN not in shown(listed)
    assert "jane@example.com" not in shown(listed)


def console(server: SlackServer, path: str, reader: str) -> tuple[int, Any]:
    request = urllib.request.Request(server.base + "/v1/console" + path)
    request.add_header("Authorization", f"Bearer {TOKEN}")
    request.add_header("X-Signoff-Reader", reader)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_the_console_reading_as_a_person_follows_the_same_rule(server: SlackServer) -> None:
    status, listed = console(server, "/runs", BOB)
    assert status == 200
    assert RUN in [r["id"] for r in listed["runs"]]
    status, listed = console(server, "/runs", EVE)
    assert status == 200
    assert listed["runs"] == []
    assert console(server, f"/runs/{RUN}", BOB)[0] == 200
    status, refused = console(server, f"/runs/{RUN}", EVE)
    assert status == 403
    assert refused["error"].startswith(f"You may not read run {RUN}")
