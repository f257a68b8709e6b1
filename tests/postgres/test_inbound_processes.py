"""Slack's requests handled once across processes: three real `signoff serve` processes on
one PostgreSQL database (two served over HTTP, one over Socket Mode), each receiving the same
event (Slack's retry reaching another worker) and the same click: each is handled once, by
whichever process noted it first, and the others answer without handling it. Socket Mode
goes through the same checks: a malformed request is not acknowledged."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from support.slack_harness import APP_TOKEN
from support.slack_harness import BOB
from support.slack_harness import FakeSlackProcess
from support.slack_harness import SlackServer
from support.slack_harness import card_click
from support.slack_harness import home_opened
from support.slack_harness import start_server

HANDLED_AGAIN = "again (retry"


def _serve(
    folder: Path, world: Path, fake: FakeSlackProcess, pg_url: str, **extra: str
) -> SlackServer:
    folder.mkdir()
    env = {"SIGNOFF_DATABASE_URL": pg_url, "SIGNOFF_WORKER_ID": folder.name} | extra
    return start_server(folder, world, fake.base_url, extra=env)


def _again(*servers: SlackServer) -> int:
    """How many deliveries the servers answered without handling (a log line each)."""
    return sum(s.log.read_text().count(HANDLED_AGAIN) for s in servers)


def _publishes(fake: FakeSlackProcess) -> int:
    return len([v for v in fake.views() if v["method"] == "views.publish"])


def test_a_retried_event_and_a_click_reaching_other_processes_are_handled_once(
    tmp_path: Path, world: Path, fake: FakeSlackProcess, pg_url: str
) -> None:
    with (
        _serve(tmp_path / "a", world, fake, pg_url) as a,
        _serve(tmp_path / "b", world, fake, pg_url) as b,
        _serve(
            tmp_path / "c", world, fake, pg_url, SLACK_APP_TOKEN=APP_TOKEN, SLACK_SIGNING_SECRET=""
        ) as c,
    ):
        event = home_opened(BOB, "Ev0TWICE")
        body = json.dumps(event).encode()
        # the first delivery to A, Slack's retries to B and to A
        for server in (a, b, a):
            assert server.slack(body, content_type="application/json")[0] == 200
        a.wait_until(lambda: _publishes(fake))
        # and to C, over Socket Mode: acknowledged, not handled
        ack = c.wait_until(lambda: fake.socket_ack("events_api", event))
        assert ack["envelope_id"]
        a.wait_until(lambda: _again(a, b, c) == 3)
        time.sleep(1.0)
        assert _publishes(fake) == 1

        # one click, delivered to A and B at once (a proxy's retry): decided once, and
        # nobody is told it was decided already
        a.start_run("refund-4471")
        [card] = a.wait_until(fake.cards)
        click = card_click("approve", card, user=BOB)
        with ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(lambda server: server.slack(click)[0], (a, b)))
        assert answers == [200, 200]
        a.wait_until(lambda: _again(a, b, c) == 4)
        # Slack is answered before the decision is written: wait for the decision itself
        approval = f"/v1/approvals/{card['metadata']['event_payload']['approval_id']}"
        a.wait_until(lambda: a.api("GET", approval)[1].get("decided_by"))
        status, decided = a.api("GET", approval)
        assert status == 200, decided
        assert [v["by"] for v in decided["votes"]] in ([BOB], [])  # one vote, or a single decision
        assert decided["decided_by"] == BOB
        assert fake.told(BOB) == []

        # Socket Mode refuses what HTTP refuses (400 there): not acknowledged, one log line
        malformed = {"type": "event_callback", "event": {"type": "app_home_opened"}}
        refused = fake.control(
            "socket", {"type": "events_api", "payload": malformed, "ack_within": 2}
        )
        assert "envelope_id" not in refused, refused
        c.wait_until(lambda: "refused a Socket Mode events_api request" in c.log.read_text())
        assert "Traceback" not in a.log.read_text() + b.log.read_text() + c.log.read_text()
