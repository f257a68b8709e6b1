"""Escalation and waiting you can see, against a real `signoff serve` and the fake Slack: the
card says who is asked now, when the next reminder goes and who is asked next; a reminder says
how long it has waited; `/runs pending` lists the longest waiting first, with its wait."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.slack_harness import ANN
from support.slack_harness import APPROVALS
from support.slack_harness import BOB
from support.slack_harness import FakeSlackProcess
from support.slack_harness import SlackServer
from support.slack_harness import approval_id_of
from support.slack_harness import slash
from support.slack_harness import start_server

ONCALL_PERSON = "U0ONCALL"
POLICY = f"""
[policies.tools.issue_refund]
channel = "{APPROVALS}"
approvers = ["{BOB}", "{ANN}"]
remind_every = "3s"
max_reminders = 1
escalate_to = "{ONCALL_PERSON}"
"""


@pytest.fixture
def server(tmp_path: Path, world: Path, fake: FakeSlackProcess) -> Iterator[SlackServer]:
    with start_server(tmp_path, world, fake.base_url, policy=POLICY) as running:
        yield running


def ask(server: SlackServer, order: str) -> str:
    body = {
        "tool": "issue_refund",
        "args": {"order_id": order, "amount_cents": 100},
        "requested_by": "U0REQ",
    }
    status, answer = server.api("POST", "/v1/approvals", body)
    assert status in (200, 201), answer
    return str(answer["id"])


def context_texts(message: dict[str, Any]) -> list[str]:
    return [e["text"] for b in message["blocks"] if b["type"] == "context" for e in b["elements"]]


def test_the_card_names_the_chain_and_the_reminder_its_wait(
    server: SlackServer, fake: FakeSlackProcess
) -> None:
    ask(server, "4471")
    [card] = server.wait_until(lambda: fake.cards())
    chain = next(t for t in context_texts(card) if t.startswith("Asked now:"))
    assert f"<@{BOB}> <@{ANN}>" in chain
    assert "next reminder <!date^" in chain
    assert f"then <@{ONCALL_PERSON}> <!date^" in chain
    assert "if nobody answers" in chain

    [reminder] = server.wait_until(lambda: fake.replies(APPROVALS, card["ts"]), within=20)
    assert any(t.startswith("Waiting ") for t in context_texts(reminder))

    def escalated() -> str | None:
        [now] = fake.cards()
        line = next((t for t in context_texts(now) if t.startswith("Asked now:")), "")
        return line if f"<@{ONCALL_PERSON}>" in line.split(" · ")[0] else None

    line = server.wait_until(escalated, within=30)  # the card follows: on-call is asked now
    assert "then <@" not in line


def test_runs_pending_lists_the_longest_waiting_first_with_its_wait(
    server: SlackServer, fake: FakeSlackProcess
) -> None:
    first = ask(server, "1001")
    second = ask(server, "1002")
    server.wait_until(lambda: len(fake.cards()) == 2)
    status, body, _ = server.slack(slash("pending", user=BOB))
    assert status == 200
    reply = json.loads(body)
    lines = [b["text"]["text"] for b in reply["blocks"] if b["type"] == "section"][1:]
    assert "1001" in lines[0]
    assert "1002" in lines[1]
    assert all(" · waiting " in line for line in lines)
    assert {approval_id_of(c) for c in fake.cards()} == {first, second}
