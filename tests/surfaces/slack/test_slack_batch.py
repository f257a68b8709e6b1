"""Batches in the App Home, over real signed requests to a real `signoff serve` with the fake
Slack: bob's Home offers to decide his 20 pending refunds together; the button opens a modal
listing them, all chosen; its submission (with his own request slipped in) decides the 20,
each its own decision with its own audit event and receipt, refuses his own and says so in
his Home, and makes no learned rule. A decline without a reason is refused in the modal."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.slack_harness import BOB
from support.slack_harness import FakeSlackProcess
from support.slack_harness import SlackServer
from support.slack_harness import form
from support.slack_harness import open_home
from support.slack_harness import start_server
from support.slack_served import home_button

from bot.dev.slack.fake_web import trigger

BATCH = 20
REQUESTER = "U0REQ"


@pytest.fixture
def server(tmp_path: Path, world: Path, fake: FakeSlackProcess) -> Iterator[SlackServer]:
    extra = {"SIGNOFF_API_RATE_PER_MINUTE": "100000"}
    with start_server(tmp_path, world, fake.base_url, extra=extra) as running:
        yield running


def ask(server: SlackServer, n: int, requester: str) -> str:
    args = {"order_id": f"o{n}", "amount_cents": 100 + n}
    body = {"tool": "issue_refund", "args": args, "requested_by": requester}
    status, answer = server.api("POST", "/v1/approvals", body)
    assert status in (200, 201), answer
    return str(answer["id"])


def home_of(fake: FakeSlackProcess, user: str) -> dict[str, Any] | None:
    published = [v for v in fake.views() if v["method"] == "views.publish"]
    mine = [v["view"] for v in published if v["user_id"] == user]
    return mine[-1] if mine else None


def batch_buttons(view: dict[str, Any] | None) -> list[dict[str, Any]]:
    found = view["blocks"] if view else []
    return [
        e
        for b in found
        if b["type"] == "actions"
        for e in b["elements"]
        if e.get("action_id") == "batch"
    ]


def click_batch(server: SlackServer, tool: str) -> None:
    click = home_button("batch", "batches", tool, user=BOB, trigger_id=trigger())
    status, _, _ = server.slack(click)
    assert status == 200


def submit(server: SlackServer, chosen: list[str], decision: str, reason: str = "") -> bytes:
    values = {
        "approvals": {
            "approvals": {
                "type": "multi_static_select",
                "selected_options": [
                    {"value": i, "text": {"type": "plain_text", "text": i}} for i in chosen
                ],
            }
        },
        "decision": {"decision": {"type": "radio_buttons", "selected_option": {"value": decision}}},
        "reason": {"reason": {"type": "plain_text_input", "value": reason or None}},
    }
    payload = {
        "type": "view_submission",
        "team": {"id": "T0SIGNOFF", "domain": "signoff"},
        "user": {"id": BOB, "username": "bob", "team_id": "T0SIGNOFF"},
        "api_app_id": "A0SIGNOFF",
        "token": "legacy-verification-token",
        "trigger_id": trigger(),
        "view": {
            "id": "V0BATCH",
            "type": "modal",
            "callback_id": "batch_decide",
            "private_metadata": "issue_refund",
            "state": {"values": values},
        },
    }
    status, body, _ = server.slack(form({"payload": json.dumps(payload)}))
    assert status == 200
    return body


def test_a_batch_of_twenty_from_the_home_tab(
    server: SlackServer, fake: FakeSlackProcess, tmp_path: Path
) -> None:
    asked = [ask(server, n, REQUESTER) for n in range(BATCH)]
    own = ask(server, 99, BOB)

    open_home(server, BOB)
    heading = f"Decide {BATCH} issue_refund requests together"
    (button,) = server.wait_until(
        lambda: [b for b in batch_buttons(home_of(fake, BOB)) if b["text"]["text"] == heading]
    )
    assert button["value"] == "issue_refund"

    click_batch(server, "issue_refund")
    modal = server.wait_until(lambda: fake.modals() and fake.modals()[-1]["view"])
    assert modal["callback_id"] == "batch_decide"
    chooser = next(b for b in modal["blocks"] if b.get("block_id") == "approvals")["element"]
    offered = [o["value"] for o in chooser["options"]]
    assert sorted(offered) == sorted(asked)  # his own request is not offered
    assert chooser["initial_options"] == chooser["options"]

    # a decline needs a reason: the modal says so, nothing changes
    refused = json.loads(submit(server, asked, "declined"))
    assert refused["response_action"] == "errors"
    assert "reason" in refused["errors"]
    assert {server.api("GET", f"/v1/approvals/{i}")[1]["state"] for i in asked} == {"pending"}

    submit(server, [*asked, own], "approved")

    def all_approved() -> bool:
        states = {server.api("GET", f"/v1/approvals/{i}")[1]["state"] for i in asked}
        return states == {"approved"}

    server.wait_until(all_approved)
    said = server.wait_until(
        lambda: (h := home_of(fake, BOB)) and "each on its own" in json.dumps(h) and h
    )
    text = json.dumps(said["blocks"], ensure_ascii=False).replace("\u2060", "")  # word joiners
    assert f"Approved {BATCH} issue_refund requests" in text
    assert own in text
    assert "self-approval" in text

    receipts = set()
    for approval_id in asked:
        decided = server.api("GET", f"/v1/approvals/{approval_id}")[1]
        assert decided["decided_by"] == BOB
        _, trail = server.api("GET", f"/v1/audit?approval_id={approval_id}")
        assert [e["action"] for e in trail["events"]].count("approval_approved") == 1
        status, receipt = server.api("GET", f"/v1/approvals/{approval_id}/receipt")
        assert status == 200, receipt
        receipts.add(json.dumps(receipt))
    assert len(receipts) == BATCH
    assert server.api("GET", f"/v1/approvals/{own}")[1]["state"] == "pending"
    with sqlite3.connect(tmp_path / "signoff.db") as db:
        assert db.execute("SELECT count(*) FROM learned_rules").fetchone()[0] == 0
