""" "Approve + similar…" over signed Slack requests to a real `signoff serve`, against the fake
Web API: someone who may not write rules is refused and nothing changes; a rule-writer's
click approves and opens the modal with the rule and its backtest; submitting makes the rule
(bad input shown in the modal, nothing stored); the next similar run is approved at once,
citing the rule; `/runs rules` lists it with its uses; `/runs revoke` stops it."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.slack_harness import ANN
from support.slack_harness import APPROVALS
from support.slack_harness import BOB
from support.slack_harness import EVE
from support.slack_harness import POLICY
from support.slack_harness import REQUESTER
from support.slack_harness import FakeSlackProcess
from support.slack_harness import SlackServer
from support.slack_harness import approval_id_of
from support.slack_harness import button
from support.slack_harness import buttons_of
from support.slack_harness import slash_text
from support.slack_harness import start_server
from support.slack_harness import submission
from support.slack_harness import told_on_click

CONFIG = (
    POLICY
    + f"""
[learned_rules]
writers = ["{BOB}", "{ANN}"]
"""
)


@pytest.fixture
def server(tmp_path: Path, world: Path, fake: FakeSlackProcess) -> Iterator[SlackServer]:
    with start_server(tmp_path, world, fake.base_url, policy=CONFIG) as running:
        yield running


def start(server: SlackServer, run_id: str, order: str) -> None:
    server.start_run(run_id, f"Refund order {order}")


def scrape(server: SlackServer) -> str:
    with urllib.request.urlopen(f"{server.base}/metrics", timeout=10) as response:
        return str(response.read().decode())


def status_of(server: SlackServer, run_id: str) -> str:
    return str(server.run(run_id)["status"])


def test_approve_similar_makes_a_rule_that_approves_the_next_one_until_revoked(
    fake: FakeSlackProcess, server: SlackServer
) -> None:
    start(server, "first", "4471")  # 41.36, no restocking fee
    [card] = server.wait_until(lambda: fake.cards())
    approval_id = approval_id_of(card)
    assert "approve_similar" in buttons_of(card)

    # Someone who may not write rules: refused, and the approval still waits.
    assert "may not write approval rules" in told_on_click(
        server, fake, "approve_similar", card, user=EVE
    )
    assert status_of(server, "first") == "waiting_approval"

    status, _, seconds = server.slack(
        button("approve_similar", approval_id, user=BOB, ts=card["ts"])
    )
    assert (status, seconds < 3) == (200, True)
    server.wait_until(lambda: status_of(server, "first") == "done")
    [opened] = server.wait_until(fake.modals)
    view: dict[str, Any] = opened["view"]
    assert view["callback_id"] == "similar_rule"
    blocks = {b.get("block_id"): b for b in view["blocks"]}
    rule = blocks["when"]["element"]["initial_value"]
    assert rule == (
        'tool == "issue_refund" && args.amount_cents <= 4136 && args.restocking_fee_cents <= 0'
    )
    assert blocks["expires"]["element"]["initial_value"] == "7"
    assert "Backtest running" in view["blocks"][3]["text"]["text"]  # opened before it ran
    [tested] = server.wait_until(lambda: fake.updates(view["id"]))
    assert [b.get("block_id") for b in tested["blocks"]] == [
        b.get("block_id") for b in view["blocks"]
    ]
    backtest = tested["blocks"][3]["text"]["text"]
    assert backtest.startswith("*Backtest*\nof the last 1 requests for issue")
    assert backtest.endswith("the rule would have approved 1 at once")

    meta = view["private_metadata"]
    for values, field in [
        ({"when": rule, "expires": "7", "reason": ""}, "reason"),
        ({"when": rule, "expires": "120", "reason": "small"}, "expires"),
        ({"when": "args.nope > 1", "expires": "7", "reason": "small"}, "when"),
    ]:
        status, body, _ = server.slack(submission("similar_rule", meta, values, user=BOB))
        assert status == 200
        assert field in json.loads(body)["errors"], body
    assert "No approval rules" in slash_text(server, "rules", BOB)

    values = {"when": rule, "expires": "7", "reason": "small refunds, no fee"}
    status, body, _ = server.slack(submission("similar_rule", meta, values, user=BOB))
    assert (status, body) == (200, b"")
    listed = slash_text(server, "rules", ANN)
    rule_id = listed.split()[0].strip("`")
    assert rule_id.startswith("lr_")
    assert "[active]" in listed
    assert "used 0x" in listed

    start(server, "second", "1007")  # 19.88: the rule approves it at once, no card
    server.wait_until(lambda: status_of(server, "second") == "done")
    assert len(fake.cards()) == 1
    assert "used 1x" in slash_text(server, "rules", BOB)
    status, shown_run = server.api("GET", "/v1/console/runs/second")
    approvals = [
        a
        for row in shown_run["timeline"]
        for c in row.get("calls", [])
        for a in c.get("approvals", [])
    ]
    assert [rule_id in (a["reason"] or "") for a in approvals] == [True]
    status, console = server.api("GET", "/v1/console/rules")
    assert status == 200
    [shown] = [r for r in console["rules"] if r["id"] == rule_id]
    assert (shown["uses"], shown["author"], shown["status"]) == (1, BOB, "active")
    metrics = scrape(server)
    assert (
        f'signoff_learned_rule_uses_total{{rule="{rule_id}",status="active",'
        'tool="issue_refund"} 1.0' in metrics
    )
    decided = (
        'signoff_approval_time_to_decision_seconds_count{outcome="approved",policy="issue_refund"}'
    )
    assert f"{decided} 1.0" in metrics

    assert "revoked" in slash_text(server, f"revoke {rule_id}", ANN)
    start(server, "third", "1007")
    server.wait_until(lambda: len(fake.cards()) == 2)
    assert status_of(server, "third") == "waiting_approval"
    assert "[revoked]" in slash_text(server, "rules", BOB)
    assert "No rule `lr_nope`" in slash_text(server, "revoke lr_nope", BOB)


def test_a_rule_submitted_before_its_backtest_showed_a_decline_asks_to_confirm_it(
    fake: FakeSlackProcess, server: SlackServer
) -> None:
    """The modal opens before its backtest is in: a person who saves the rule at once, when
    the backtest finds a request someone declined, gets the modal back with the backtest and
    the confirmation to type, what they typed kept; nothing is made until they confirm."""
    start(server, "declined", "1007")  # 19.88: under the rule 4471's refund suggests
    [first] = server.wait_until(lambda: fake.cards())
    server.slack(button("decline", approval_id_of(first), user=BOB, ts=first["ts"]))
    server.wait_until(lambda: fake.modals())
    reason = {"reason": "not this customer"}
    server.slack(submission("decline_reason", approval_id_of(first), reason, user=BOB))
    server.wait_until(lambda: status_of(server, "declined") == "done")
    start(server, "similar", "4471")
    card = server.wait_until(lambda: [c for c in fake.cards() if c["ts"] != first["ts"]])[0]
    server.slack(button("approve_similar", approval_id_of(card), user=BOB, ts=card["ts"]))
    opened = server.wait_until(lambda: fake.modals()[1:])[0]["view"]
    rule = opened["blocks"][0]["element"]["initial_value"]

    typed = {"when": rule, "expires": "5", "reason": "small refunds"}
    status, body, _ = server.slack(
        submission("similar_rule", opened["private_metadata"], typed, user=BOB)
    )

    assert status == 200, body
    answer = json.loads(body)
    assert answer["response_action"] == "update"
    shown = {b.get("block_id"): b for b in answer["view"]["blocks"]}
    assert "confirm" in shown
    assert [shown[k]["element"].get("initial_value") for k in typed] == list(typed.values())
    assert "1 of those a person declined" in json.dumps(answer["view"])
    assert "No approval rules" in slash_text(server, "rules", BOB)
    confirmed = typed | {"confirm": "yes"}
    status, body, _ = server.slack(
        submission("similar_rule", opened["private_metadata"], confirmed, user=BOB)
    )
    assert (status, body) == (200, b"")
    assert "[active]" in slash_text(server, "rules", BOB)


def test_without_rule_writers_the_card_has_no_approve_similar(
    tmp_path: Path, world: Path, fake: FakeSlackProcess
) -> None:
    with start_server(tmp_path, world, fake.base_url) as running:
        start(running, "plain", "4471")
        [card] = running.wait_until(lambda: fake.cards(APPROVALS))
        assert "approve_similar" not in buttons_of(card)


WIRE_CONFIG = f"""
agents = ["tests.support.similar_agents:agent"]

[policies.tools.send_wire]
channel = "{APPROVALS}"
approvers = ["{BOB}", "{ANN}"]

[learned_rules]
writers = ["{BOB}", "{ANN}"]
"""


def ask_wire(server: SlackServer, cents: int) -> dict[str, Any]:
    body = {
        "tool": "send_wire",
        "args": {"account": "DE00", "amount_cents": cents},
        "requested_by": REQUESTER,
    }
    status, approval = server.api("POST", "/v1/approvals", body)
    assert status == 201, approval
    return dict(approval)


def test_a_rule_for_an_effect_that_cannot_be_undone_waits_for_a_second_writer(
    tmp_path: Path, world: Path, fake: FakeSlackProcess
) -> None:
    root = str(Path(__file__).resolve().parents[3])
    with start_server(
        tmp_path, world, fake.base_url, policy=WIRE_CONFIG, extra={"PYTHONPATH": root}
    ) as running:
        first = ask_wire(running, 100)
        [card] = running.wait_until(lambda: fake.cards())
        running.slack(button("approve_similar", first["id"], user=BOB, ts=card["ts"]))
        [opened] = running.wait_until(fake.modals)
        view = opened["view"]
        assert "cannot be undone" in json.dumps(view["blocks"])
        rule = 'tool == "send_wire" && args.amount_cents <= 100'
        values = {"when": rule, "expires": "3", "reason": "test wires"}
        status, body, _ = running.slack(
            submission("similar_rule", view["private_metadata"], values, user=BOB)
        )
        assert (status, body) == (200, b"")
        asking = running.wait_until(
            lambda: [m for m in fake.messages(APPROVALS) if "confirm_rule" in json.dumps(m)]
        )
        rule_id = asking[0]["blocks"][1]["elements"][0]["value"]
        assert "[proposed]" in slash_text(running, "rules", ANN)
        assert ask_wire(running, 50)["state"] == "pending"  # not in force yet

        running.slack(button("confirm_rule", rule_id, user=BOB, ts=asking[0]["ts"]))
        told = running.wait_until(lambda: fake.told(BOB))
        assert "someone else" in told[-1]["text"]
        running.slack(button("confirm_rule", rule_id, user=ANN, ts=asking[0]["ts"]))
        running.wait_until(
            lambda: "confirmed by" in fake.messages(APPROVALS)[asking_index(fake, rule_id)]["text"]
        )
        assert "[active]" in slash_text(running, "rules", ANN)
        approved = ask_wire(running, 60)
        assert (approved["state"], approved["decided_by"]) == ("approved", "signoff")
        assert rule_id in approved["reason"]


def asking_index(fake: FakeSlackProcess, rule_id: str) -> int:
    messages = fake.messages(APPROVALS)
    return next(i for i, m in enumerate(messages) if rule_id in json.dumps(m.get("blocks")))
