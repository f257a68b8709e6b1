"""Slack's answers are checked, not trusted: a `chat.postMessage` answered `ok` without a
usable ts or channel (no `ts`, `""`, null) is a post whose outcome is unknown. `signoff serve`
(a real process, against the fake Slack in its own process) finds the card by its metadata,
or takes its place from a click on it, and records only a real ts: the decision then updates
the one card and threads its note under it."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from support.slack_harness import APPROVALS
from support.slack_harness import BOB
from support.slack_harness import REQUESTER
from support.slack_harness import FakeSlackProcess
from support.slack_harness import SlackServer
from support.slack_harness import approval_id_of
from support.slack_harness import card_click
from support.slack_harness import start_server

QUICK = {"SIGNOFF_OUTBOX_CLAIM_SECONDS": "3"}


def ask(server: SlackServer, approval_id: str) -> None:
    body = {"tool": "issue_refund", "args": {"order_id": approval_id, "amount_cents": 500},
            "approval_id": approval_id, "requested_by": REQUESTER}  # fmt: skip
    status, view = server.api("POST", "/v1/approvals", body)
    assert status == 201, view


def recorded(tmp_path: Path, approval_id: str) -> tuple[str | None, str | None]:
    with sqlite3.connect(tmp_path / "signoff.db") as conn:
        row = conn.execute(
            "SELECT channel, message_ts FROM approvals WHERE id = ?", (approval_id,)
        ).fetchone()
    return row[0], row[1]


def card_posts(fake: FakeSlackProcess) -> int:
    return sum(
        1
        for c in fake.calls()
        if c["method"] == "chat.postMessage" and "signoff_approval" in json.dumps(c["args"])
    )


def decided(fake: FakeSlackProcess, card: dict[str, Any]) -> bool:
    """The card shows the decision (no buttons) and its thread has the decided note."""
    [now] = [m for m in fake.cards() if m["ts"] == card["ts"]]
    buttons = [b for b in now["blocks"] if b["type"] == "actions"]
    notes = [m["text"] for m in fake.replies(APPROVALS, card["ts"])]
    shown = "Approved by" in json.dumps(now["blocks"])
    return shown and not buttons and any("was approved by" in n for n in notes)


@pytest.mark.parametrize(
    ("shape", "channel"),
    [("missing", True), ("empty", True), ("null", True), ("missing", False)],
    ids=["no-ts", "empty-ts", "null-ts", "no-ts-no-channel"],
)
def test_an_ok_without_a_ts_is_looked_up_and_only_a_real_ts_recorded(
    tmp_path: Path, world: Path, fake: FakeSlackProcess, shape: str, channel: bool
) -> None:
    fake.control("answer_without_ts", {"n": 1, "ts": shape, "channel": channel})
    with start_server(tmp_path, world, fake.base_url, extra=QUICK) as server:
        ask(server, "odd-1")
        [card] = server.wait_until(fake.cards)
        found = server.wait_until(lambda: recorded(tmp_path, "odd-1")[1], within=15)
        assert recorded(tmp_path, "odd-1") == (APPROVALS, card["ts"])
        assert found == card["ts"]
        assert server.slack(card_click("approve", card, user=BOB))[0] == 200
        server.wait_until(lambda: decided(fake, card), within=15)
        time.sleep(1.0)  # nothing posts a second card afterwards
        assert [c["ts"] for c in fake.cards()] == [card["ts"]]
        assert card_posts(fake) == 1
        log = server.log.read_text()
    assert "answered ok without a usable ts/channel" in log
    assert "Traceback" not in log


def test_a_click_names_the_card_when_slack_did_not_and_cannot_be_asked(
    tmp_path: Path, world: Path, fake: FakeSlackProcess
) -> None:
    """The look-up fails (Slack answers 500 for a while); the click carries the card's ts,
    which is recorded before the decision, so the decision's update finds the card."""
    fake.control("answer_without_ts", {"n": 1, "ts": "empty"})
    with start_server(tmp_path, world, fake.base_url, extra=QUICK) as server:
        ask(server, "odd-2")
        [card] = server.wait_until(fake.cards)
        fake.control("fail", {"seconds": 6, "status": 500})
        assert approval_id_of(card) == "odd-2"
        assert recorded(tmp_path, "odd-2")[1] is None
        assert server.slack(card_click("approve", card, user=BOB))[0] == 200
        assert recorded(tmp_path, "odd-2") == (APPROVALS, card["ts"])
        server.wait_until(lambda: decided(fake, card), within=30)
        assert [c["ts"] for c in fake.cards()] == [card["ts"]]
        assert card_posts(fake) == 1
