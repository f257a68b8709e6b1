"""Policies seen from Slack: self-approval, expiry, withdrawal, reminders and escalation in
the card's thread, quorum progress on the card, the Home tab, and cards for API approvals."""

from __future__ import annotations

import json
from pathlib import Path

from support.slack_harness import ANN
from support.slack_harness import APPROVALS
from support.slack_harness import BOB
from support.slack_harness import EVE
from support.slack_harness import FakeSlackProcess
from support.slack_harness import SlackServer
from support.slack_harness import approval_id_of
from support.slack_harness import card_click
from support.slack_harness import open_home
from support.slack_harness import slash
from support.slack_harness import start_server

LEADS = "S0LEADS"
BOB_APPROVES = f'[policies.tools.issue_refund]\napprovers = ["{BOB}"]\n'


def served(tmp_path: Path, world: Path, fake: FakeSlackProcess, policy: str) -> SlackServer:
    return start_server(tmp_path, world, fake.base_url, policy=policy)


def start(server: SlackServer, fake: FakeSlackProcess, run_id: str, *, by: str) -> dict:
    """Start a refund run requested by `by`; its card once posted."""
    server.start_run(run_id, requested_by=by)
    [card] = server.wait_until(
        lambda: [c for c in fake.cards() if c["metadata"]["event_payload"].get("run_id") == run_id]
    )
    return card


def told(server: SlackServer, fake: FakeSlackProcess, user: str) -> str:
    found = server.wait_until(lambda: fake.told(user))
    return str(found[-1]["text"])


def test_the_requester_cannot_approve_their_own_refund(
    tmp_path: Path, world: Path, fake: FakeSlackProcess
) -> None:
    with served(tmp_path, world, fake, BOB_APPROVES) as server:
        card = start(server, fake, "self", by=BOB)
        server.slack(card_click("approve", card, user=BOB))
        assert "You asked for this action, and policy" in told(server, fake, BOB)
        assert server.run("self")["status"] == "waiting_approval"


def test_a_click_after_expiry_or_withdrawal_is_refused_with_what_happened(
    tmp_path: Path, world: Path, fake: FakeSlackProcess
) -> None:
    policy = f'[policies.tools.issue_refund]\napprovers = ["{BOB}"]\ntimeout = "1s"\n'
    with served(tmp_path, world, fake, policy) as server:
        expiring = start(server, fake, "expiring", by=EVE)
        server.wait_until(lambda: "Expired" in json.dumps(fake.cards()[0]["blocks"]), within=20)
        server.slack(card_click("approve", expiring, user=BOB))
        assert "expired" in told(server, fake, BOB)

        server.start_run("withdrawn", requested_by=EVE)
        [card] = server.wait_until(
            lambda: [c for c in fake.cards() if "withdrawn" in json.dumps(c["metadata"])]
        )
        status, _, _ = server.slack(slash("cancel withdrawn", user=BOB))
        assert status == 200
        server.wait_until(lambda: server.run("withdrawn")["status"] == "cancelled")
        server.slack(card_click("approve", card, user=BOB))
        server.wait_until(lambda: len(fake.told(BOB)) == 2)
        assert "withdrawn" in told(server, fake, BOB)


def test_reminders_and_the_escalation_go_in_the_cards_thread(
    tmp_path: Path, world: Path, fake: FakeSlackProcess
) -> None:
    policy = (
        f'[policies.tools.issue_refund]\napprovers = ["{BOB}"]\nremind_every = "1s"\n'
        f'max_reminders = 1\nescalate_to = "{LEADS}"\n'
    )
    with served(tmp_path, world, fake, policy) as server:
        card = start(server, fake, "reminded", by=EVE)
        replies = server.wait_until(
            lambda: len(r := fake.replies(APPROVALS, card["ts"])) >= 2 and r, within=20
        )
        text = json.dumps(replies)
        assert f"<!subteam^{LEADS}>" in text
        assert "eminder" in text


def test_a_quorum_card_shows_who_approved_so_far(
    tmp_path: Path, world: Path, fake: FakeSlackProcess
) -> None:
    policy = (
        f'[policies.tools.issue_refund]\napprovers = ["{BOB}", "{ANN}"]\nrequired_approvals = 2\n'
    )
    with served(tmp_path, world, fake, policy) as server:
        card = start(server, fake, "quorum", by=EVE)
        server.slack(card_click("approve", card, user=BOB))
        server.wait_until(lambda: "1 of 2" in json.dumps(fake.cards()[0]["blocks"]))
        assert BOB in json.dumps(fake.cards()[0]["blocks"])
        assert server.run("quorum")["status"] == "waiting_approval"

        server.slack(card_click("approve", card, user=ANN))
        server.wait_until(lambda: server.run("quorum")["status"] == "done")


def test_the_home_tab_shows_what_waits_for_the_viewer(
    tmp_path: Path, world: Path, fake: FakeSlackProcess
) -> None:
    with served(tmp_path, world, fake, BOB_APPROVES) as server:
        card = start(server, fake, "home", by=EVE)
        open_home(server, BOB)

        mine = lambda: [v for v in fake.views() if v["user_id"] == BOB]  # noqa: E731
        published = server.wait_until(mine)[-1]
        assert published["view"]["type"] == "home"
        buttons = [
            e for b in published["view"]["blocks"] if b["type"] == "actions" for e in b["elements"]
        ]
        assert approval_id_of(card) in {b["value"] for b in buttons}


def test_an_api_approval_gets_a_card_with_its_arguments_escaped(
    tmp_path: Path, world: Path, fake: FakeSlackProcess
) -> None:
    with served(tmp_path, world, fake, f'[policies.default]\napprovers = ["{BOB}"]\n') as server:
        hostile = {
            "note": "<!here> <@U0CEO> <#C0GENERAL> <https://evil.example|bank.com>",
            "style": "*bold* _x_ ~s~ ```code``` & done",
        }
        status, view = server.api(
            "POST", "/v1/approvals", {"tool": "wire_transfer", "args": hostile, "requested_by": EVE}
        )
        assert status == 201, view
        [card] = server.wait_until(fake.cards)
        # Slack parses mrkdwn objects and the fallback text; plain_text shows as it is.
        parsed = " ".join([*mrkdwn_texts(card["blocks"]), card["text"]])
        for control in ("<!here>", "<@U0CEO>", "<#C0GENERAL>", "<https://evil"):
            assert control not in parsed
        assert "&lt;!here&gt;" in parsed
        assert "*bold*" not in parsed
        assert "```code```" not in parsed


def mrkdwn_texts(node: object) -> list[str]:
    """Every mrkdwn text object's text, anywhere in the blocks."""
    if isinstance(node, list):
        return [t for item in node for t in mrkdwn_texts(item)]
    if not isinstance(node, dict):
        return []
    own = [node["text"]] if node.get("type") == "mrkdwn" else []
    return own + [t for value in node.values() for t in mrkdwn_texts(value)]
