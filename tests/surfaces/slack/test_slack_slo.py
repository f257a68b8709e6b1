"""A policy's decision target ("decided within …") over a real `signoff serve` and the fake
Web API: the card states it, a reminder past it says it was missed, the decided card too;
/metrics shows the approval as pending past its target while nobody decides it, then counts
it as decided past its target."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from support.slack_harness import APPROVALS
from support.slack_harness import BOB
from support.slack_harness import FakeSlackProcess
from support.slack_harness import SlackServer
from support.slack_harness import card_click
from support.slack_harness import start_server

CONFIG = f"""
[policies.tools.issue_refund]
channel = "{APPROVALS}"
approvers = ["{BOB}"]
remind_every = "2s"
decide_within = "1s"
"""


PENDING_LATE = 'signoff_approvals_pending_past_target{policy="issue_refund"}'


def scrape(server: SlackServer) -> str:
    with urllib.request.urlopen(f"{server.base}/metrics", timeout=10) as response:
        return str(response.read().decode())


def test_the_card_reminders_and_metrics_say_when_the_target_is_missed(
    tmp_path: Path, world: Path, fake: FakeSlackProcess
) -> None:
    server: SlackServer = start_server(tmp_path, world, fake.base_url, policy=CONFIG)
    try:
        server.start_run("slo")
        [card] = server.wait_until(lambda: fake.cards())
        assert "target: decided within 1s" in json.dumps(card["blocks"])

        reminder = server.wait_until(lambda: fake.replies(APPROVALS, card["ts"]))
        assert "past its 1s decision target" in json.dumps(reminder[0]["blocks"])
        # Still pending past its target: the gauge sees it before anyone decides.
        assert f"{PENDING_LATE} 1.0" in scrape(server)
        assert 'signoff_approvals_past_target_total{policy="issue_refund"}' not in scrape(server)

        server.slack(card_click("approve", card, user=BOB))
        server.wait_until(lambda: server.run("slo")["status"] == "done")
        updated = server.wait_until(lambda: (m := fake.cards()[0])["edited"] and m)
        assert "past its 1s decision target" in json.dumps(updated["blocks"])
        metrics = scrape(server)
        assert 'signoff_approvals_past_target_total{policy="issue_refund"} 1.0' in metrics
        assert f"{PENDING_LATE} 0.0" in metrics
    finally:
        server.kill()
