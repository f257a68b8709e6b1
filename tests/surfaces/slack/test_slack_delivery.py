"""Slack is not the database: cards survive outages and crashes exactly once, pages reach
on-call and are acknowledged, Socket Mode works, and agent text cannot ping anyone."""

from __future__ import annotations

import json
import time
import urllib.parse
from pathlib import Path

from support.helpers import SIGNOFF
from support.helpers import clean_env
from support.helpers import free_port
from support.helpers import run_text
from support.slack_harness import APP_TOKEN
from support.slack_harness import APPROVALS
from support.slack_harness import BOB
from support.slack_harness import ONCALL
from support.slack_harness import FakeSlackProcess
from support.slack_harness import SlackServer
from support.slack_harness import approval_id_of
from support.slack_harness import button
from support.slack_harness import card_click
from support.slack_harness import environment
from support.slack_harness import start_server
from support.slack_served import over_socket

QUICK = {"SIGNOFF_OUTBOX_CLAIM_SECONDS": "3"}


def start_refunds(server: SlackServer, *run_ids: str, task: str = "Refund order 4471") -> None:
    for run_id in run_ids:
        server.start_run(run_id, task)


def posts(fake: FakeSlackProcess) -> list[str]:
    """The approval ids of every card posted, duplicates included."""
    return sorted(approval_id_of(card) for card in fake.cards())


def test_an_outage_of_500s_429s_and_silence_delays_cards_but_posts_each_once(
    tmp_path: Path, world: Path, fake: FakeSlackProcess
) -> None:
    fake.control("fail", {"n": 4, "status": 500})
    fake.control("fail", {"n": 3, "status": 429, "retry_after": 1})
    fake.control("hang", {"n": 2, "seconds": 2})
    with start_server(tmp_path, world, fake.base_url, extra=QUICK) as server:
        start_refunds(server, "out-1", "out-2", "out-3")
        for run_id in ("out-1", "out-2", "out-3"):
            server.wait_until(lambda r=run_id: server.run(r)["status"] == "waiting_approval")

        found = server.wait_until(lambda: len(p := posts(fake)) >= 3 and p, within=40)
        time.sleep(2)  # a duplicate would come from a retry after this point

        assert len(posts(fake)) == 3
        assert len(set(found)) == 3
        statuses = {call["status"] for call in fake.calls()}
        assert {500, 429} <= statuses


def test_a_post_that_landed_before_a_crash_is_found_not_posted_again(
    tmp_path: Path, world: Path, fake: FakeSlackProcess
) -> None:
    # Slack accepts the post, but the answer never reaches the sender, which is then killed:
    # its ts was never recorded.
    fake.control("drop_after_post", {"n": 1})
    server = start_server(tmp_path, world, fake.base_url, extra=QUICK)
    start_refunds(server, "crash-1")
    server.wait_until(lambda: len(fake.cards()) == 1)
    server.kill()

    with start_server(tmp_path, world, fake.base_url, extra=QUICK) as again:
        history_calls = lambda: [  # noqa: E731
            c for c in fake.calls() if c["method"] == "conversations.history"
        ]
        again.wait_until(history_calls, within=20)
        time.sleep(1.5)

        assert len(fake.cards()) == 1
        [card] = fake.cards()
        status, approval = again.api("GET", f"/v1/approvals/{approval_id_of(card)}")
        assert status == 200
        assert approval["state"] == "pending"
        # The card found is the one clicked: approving it through that ts works.
        status, _, _ = again.slack(card_click("approve", card, user=BOB))
        assert status == 200
        again.wait_until(lambda: again.run("crash-1")["status"] == "done")


def test_a_page_reaches_on_call_and_acknowledge_records_who(
    tmp_path: Path, world: Path, fake: FakeSlackProcess
) -> None:
    with start_server(
        tmp_path, world, fake.base_url, extra={"SIGNOFF_PAGE_REMIND_EVERY": "1s"}
    ) as server:
        start_refunds(server, "paged")
        [card] = server.wait_until(fake.cards)
        server.slack(card_click("approve", card, user=BOB))
        server.wait_until(lambda: server.run("paged")["status"] == "done")
        env = _cli_env(tmp_path, world)
        rolled = run_text(
            [SIGNOFF, "runs", "rollback", "paged", "--to-step", "1", "--yes"], cwd=tmp_path, env=env
        )
        assert rolled.returncode == 0, rolled.stderr

        pages = server.wait_until(
            lambda: [
                m
                for m in fake.messages(ONCALL)
                if (m.get("metadata") or {}).get("event_type") == "signoff_page"
            ],
            within=20,
        )
        page_id = pages[0]["metadata"]["event_payload"]["page_id"]
        assert "send_email" in json.dumps(pages[0]["blocks"])
        # Nobody acknowledges it: it is announced again in its thread.
        reminded = server.wait_until(lambda: fake.replies(ONCALL, pages[0]["ts"]), within=10)
        assert "Still needs a human" in reminded[0]["text"]
        status, body, _ = server.slack(button("acknowledge", page_id, user=BOB, channel=ONCALL))
        assert status == 200, body

        listed = server.wait_until(lambda: _acknowledged(tmp_path, world, page_id))
        assert listed["acknowledged_by"] == BOB
        server.wait_until(
            lambda: (
                "Acknowledged"
                in json.dumps(
                    next(m for m in fake.messages(ONCALL) if m["ts"] == pages[0]["ts"])["blocks"]
                )
            )
        )
        # Acknowledged pages are not announced again.
        count = len(fake.replies(ONCALL, pages[0]["ts"]))
        time.sleep(2.5)
        assert len(fake.replies(ONCALL, pages[0]["ts"])) == count


def test_the_approve_flow_over_socket_mode(
    tmp_path: Path, world: Path, fake: FakeSlackProcess
) -> None:
    with start_server(
        tmp_path,
        world,
        fake.base_url,
        extra={"SLACK_APP_TOKEN": APP_TOKEN, "SLACK_SIGNING_SECRET": ""},
    ) as server:
        start_refunds(server, "socket-1")
        [card] = server.wait_until(fake.cards)
        click = card_click("approve", card, user=BOB).decode()
        payload = json.loads(urllib.parse.parse_qs(click)["payload"][0])
        ack = over_socket(server, fake, "interactive", payload)
        assert ack["envelope_id"]
        server.wait_until(lambda: server.run("socket-1")["status"] == "done")
        # HTTP is off without a signing secret: /slack/events is not served.
        status, _, _ = server.slack(b"payload=%7B%7D")
        assert status in (404, 405)


HOSTILE = (
    "Refund <!channel> <!here> <@U0CEO> <#C0GENERAL> <https://evil.example|bank.com> "
    "*bold* _x_ ~gone~ ```code``` &amp; order 4471"
)


def test_agent_text_cannot_mention_link_or_format_in_the_card(
    tmp_path: Path, world: Path, fake: FakeSlackProcess
) -> None:
    with start_server(tmp_path, world, fake.base_url) as server:
        start_refunds(server, "hostile", task=HOSTILE)
        [card] = server.wait_until(fake.cards)
        text = json.dumps(card["blocks"]) + card["text"]

        for control in ("<!channel>", "<!here>", "<@U0CEO>", "<#C0GENERAL>", "<https://evil"):
            assert control not in text
        assert "&lt;!channel&gt;" in text
        assert "&amp;amp;" in text
        for block in card["blocks"]:
            for item in [block.get("text"), *(block.get("fields") or [])]:
                if item and item.get("type") == "mrkdwn":
                    assert item.get("verbatim") is True


def _cli_env(tmp_path: Path, world: Path) -> dict[str, str]:
    env = clean_env("SIGNOFF_", "SLACK_")
    return env | {
        "SIGNOFF_DATABASE_URL": f"sqlite:///{tmp_path / 'signoff.db'}",
        "SIGNOFF_WORLD_DB": str(world),
    }


def _acknowledged(tmp_path: Path, world: Path, page_id: str) -> dict[str, str] | None:
    listed = run_text(
        [SIGNOFF, "pages", "list", "--all", "--json"],
        cwd=tmp_path,
        env=_cli_env(tmp_path, world),
        timeout=30,
    )
    assert listed.returncode == 0, listed.stderr
    for page in json.loads(listed.stdout):
        if page["id"] == page_id and page["acknowledged_by"]:
            return dict(page)
    return None


def test_a_wrong_channel_keeps_the_card_waiting_loudly_until_fixed(
    tmp_path: Path, world: Path, fake: FakeSlackProcess
) -> None:
    no_channel = '[policies.tools.issue_refund]\napprovers = ["U0BOB"]\n'
    wrong = QUICK | {"SIGNOFF_APPROVALS_CHANNEL": "C0WRONG", "SIGNOFF_WORKER_ID": "w-fixed"}
    server = start_server(tmp_path, world, fake.base_url, extra=wrong, policy=no_channel)
    start_refunds(server, "misrouted")
    # Warned at start-up, then by the outbox, for as long as the card waits.
    server.wait_until(lambda: "check the channel id" in server.log.read_text())
    assert "channel_not_found" in server.log.read_text()
    assert fake.cards() == []
    assert server.stop() == 0

    fixed = QUICK | {"SIGNOFF_APPROVALS_CHANNEL": APPROVALS, "SIGNOFF_WORKER_ID": "w-fixed"}
    with start_server(tmp_path, world, fake.base_url, extra=fixed, policy=no_channel) as again:
        [card] = again.wait_until(fake.cards, within=30)
        assert approval_id_of(card)
        # A forged click is refused and the log says where to look.
        again.slack(button("approve", approval_id_of(card), user=BOB), secret="wrong")
        again.wait_until(lambda: "SLACK_SIGNING_SECRET" in again.log.read_text())


def test_a_token_slack_refuses_stops_the_start_with_one_line(
    tmp_path: Path, world: Path, fake: FakeSlackProcess
) -> None:
    env = environment(tmp_path, world, free_port(), fake.base_url) | {
        "SLACK_BOT_TOKEN": "xoxb-revoked"
    }
    result = run_text([SIGNOFF, "serve"], cwd=tmp_path, env=env, timeout=30)

    assert result.returncode != 0
    assert "SLACK_BOT_TOKEN was refused by Slack (invalid_auth)" in result.stderr
    assert "Traceback" not in result.stderr
