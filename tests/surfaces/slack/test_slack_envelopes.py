"""Envelopes (budgets an approver hands out) end to end: a real `signoff serve` on a SQLite
file, signed Slack requests, the fake Web API. A budget handed out from a card's "Approve +
budget…" approves the next refunds like it at once, citing it, until it is used up; one from
`/runs envelope` until its author revokes it; one from the HTTP API until it expires; one for
an effect nothing undoes waits for a second writer. At each step the live message in the
channel and the audit trail say what happened."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import spend_agents
from support.slack_harness import ANN
from support.slack_harness import APPROVALS
from support.slack_harness import BOB
from support.slack_harness import EVE
from support.slack_harness import FakeSlackProcess
from support.slack_harness import SlackServer
from support.slack_harness import approval_id_of
from support.slack_harness import button
from support.slack_harness import buttons_of
from support.slack_harness import slash_text
from support.slack_harness import start_server
from support.slack_harness import submission
from support.slack_harness import told_on_click

SUPPORT = Path(__file__).parent.parent.parent / "support"
CONFIG = f"""
agents = ["spend_agents:agent"]

[policies.default]
approvers = ["{BOB}", "{ANN}"]
channel = "{APPROVALS}"

[policies.tools.issue_refund]
channel = "{APPROVALS}"
approvers = ["{BOB}", "{ANN}"]

[limits.per_customer]
tools = ["issue_refund"]
key = "args.customer_id"
amount = "args.amount_cents"
max = 10000000
window = "30d"
ask = "default"
money = "USD"
each = "customer"
"""
WAIT = 45.0  # edits of a live message are 10 s apart at the least


@pytest.fixture
def server(tmp_path: Path, world: Path, fake: FakeSlackProcess) -> Iterator[SlackServer]:
    extra = {"PYTHONPATH": str(SUPPORT)}
    with start_server(tmp_path, world, fake.base_url, policy=CONFIG, extra=extra) as running:
        yield running


def refund(server: SlackServer, run_id: str, cents: int, customer: str = "c1") -> None:
    server.start_run(run_id, spend_agents.refund(customer, f"o-{run_id}", cents), agent="refunds")


def settled(server: SlackServer, run_id: str) -> str:
    """Its status once it is done or waits for a person."""
    return str(
        server.wait_until(
            lambda: (s := server.run(run_id)["status"]) in ("done", "waiting_approval") and s,
            within=30,
        )
    )


def approved_by_envelope(server: SlackServer, run_id: str) -> str | None:
    (approval,) = server.run(run_id)["approvals"]
    return approval.get("envelope_id")  # type: ignore[no-any-return]


def live(fake: FakeSlackProcess, channel: str = APPROVALS) -> list[dict[str, Any]]:
    return [
        m
        for m in fake.messages(channel)
        if (m.get("metadata") or {}).get("event_type") == "signoff_envelope"
    ]


def live_text(fake: FakeSlackProcess, contains: str) -> str:
    """The live message's text once it says `contains` (one message, edited in place)."""

    def found() -> str | None:
        messages = live(fake)
        assert len(messages) <= 1, messages
        return messages[0]["text"] if messages and contains in messages[0]["text"] else None

    return str(found() or _wait(fake, found))


def _wait(fake: FakeSlackProcess, check: Any) -> Any:
    import time

    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.1)
    raise AssertionError(f"not within {WAIT} s: {live(fake)}")


def audit(server: SlackServer) -> list[dict[str, Any]]:
    status, page = server.api("GET", "/v1/audit?limit=10000")
    assert status == 200, page
    return [e for e in page["events"] if e["action"].startswith("envelope_")]


def envelope_of(text: str) -> str:
    found = re.search(r"env_[0-9a-f]{12}", text)
    assert found, text
    return found[0]


def test_a_budget_from_a_card_approves_refunds_like_it_until_it_is_used_up(
    fake: FakeSlackProcess, server: SlackServer
) -> None:
    refund(server, "first", 4000)
    [card] = server.wait_until(lambda: fake.cards())
    approval_id = approval_id_of(card)
    assert "approve_envelope" in buttons_of(card)

    # Someone who may not hand out budgets: refused, and the refund still waits.
    assert "may not hand out envelopes" in told_on_click(
        server, fake, "approve_envelope", card, user=EVE
    )
    assert server.run("first")["status"] == "waiting_approval"

    status, _, seconds = server.slack(
        button("approve_envelope", approval_id, user=BOB, ts=card["ts"])
    )
    assert (status, seconds < 3) == (200, True)
    [opened] = server.wait_until(fake.modals)
    view = opened["view"]
    assert view["callback_id"] == "envelope"
    server.wait_until(lambda: server.run("first")["status"] == "done", within=30)
    blocks = {b.get("block_id"): b for b in view["blocks"]}
    assert "args.amount_cents <= 4000" in blocks["when"]["element"]["initial_value"]
    meta = view["private_metadata"]
    when = 'tool == "issue_refund" && args.amount_cents <= 5000'
    good = {"when": when, "up_to": "100", "calls": "3", "until": "8h", "reason": "outage"}
    for bad, field in [
        ({"up_to": "a lot"}, "up_to"),
        ({"until": "soon"}, "until"),
        ({"reason": ""}, "reason"),
        ({"when": "args.nope > 1"}, "when"),
    ]:
        status, body, _ = server.slack(submission("envelope", meta, good | bad, user=BOB))
        assert status == 200
        assert field in json.loads(body)["errors"], body
    assert audit(server) == []  # nothing was handed out
    status, body, _ = server.slack(submission("envelope", meta, good, user=BOB))
    assert (status, body) == (200, b"")
    assert "$0 of $100 and 0 of 3 refunds used" in live_text(fake, "of $100")
    [made] = audit(server)
    assert (made["action"], made["actor"]) == ("envelope_made", BOB)
    envelope_id = made["detail"]["envelope_id"]

    # The next refunds like it are approved at once, citing it, until it is used up.
    refund(server, "second", 3000)
    refund(server, "third", 3000)
    assert settled(server, "second") == settled(server, "third") == "done"
    assert approved_by_envelope(server, "second") == envelope_id
    assert approved_by_envelope(server, "third") == envelope_id
    refund(server, "big", 6000)  # like it? no: over $50
    assert settled(server, "big") == "waiting_approval"
    assert approved_by_envelope(server, "big") is None
    refund(server, "fourth", 4000)  # $100 of $100, 3 of 3: used up
    assert settled(server, "fourth") == "done"
    assert approved_by_envelope(server, "fourth") == envelope_id
    refund(server, "fifth", 100)
    assert settled(server, "fifth") == "waiting_approval"  # it asks a person again
    text = live_text(fake, "used up")
    assert "$100 of $100 and 3 of 3 refunds used" in text
    [message] = live(fake)
    assert not [b for b in message["blocks"] if b["type"] == "actions"]  # no Revoke now
    actions = [e["action"] for e in audit(server)]
    assert actions == ["envelope_made", "envelope_exhausted"]
    assert spend_agents.refunded("c1") == 4000 + 3000 + 3000 + 4000
    listed = slash_text(server, "envelopes", ANN)
    assert f"`{envelope_id}` exhausted" in listed


def test_a_budget_from_runs_ends_when_its_author_revokes_it(
    fake: FakeSlackProcess, server: SlackServer
) -> None:
    said = slash_text(
        server,
        'envelope issue_refund when="args.amount_cents <= 5000" up_to=$1,000 until=8h '
        'reason="refund backlog"',
        BOB,
    )
    assert "` active: issue" in said
    assert "amount\u2060_\u2060cents &lt;= 5000: $0 of $1,000 used" in said
    envelope_id = envelope_of(said)
    assert "$0 of $1,000 used" in live_text(fake, "of $1,000")
    refund(server, "one", 2500)
    assert settled(server, "one") == "done"
    assert approved_by_envelope(server, "one") == envelope_id

    # Bad input and someone who may not: a clear answer, nothing changed.
    assert "Usage" in slash_text(server, "envelope issue_refund up_to=5", BOB)
    assert "is not an amount" in slash_text(
        server, 'envelope issue_refund when="true" up_to=lots reason=x', BOB
    )
    refused = slash_text(server, f"envelope revoke {envelope_id}", EVE)
    assert "may not revoke" in refused
    assert "` revoked: " in slash_text(server, f"envelope revoke {envelope_id}", BOB)
    assert "ended already" in slash_text(server, f"envelope revoke {envelope_id}", BOB)
    text = live_text(fake, "revoked")
    assert "$25 of $1,000 used" in text
    [message] = live(fake)
    assert f"<@{BOB}>" in message["blocks"][0]["text"]["text"]  # revoked by whom
    refund(server, "two", 2500)
    assert settled(server, "two") == "waiting_approval"
    actions = [(e["action"], e["actor"]) for e in audit(server)]
    assert actions == [("envelope_made", BOB), ("envelope_revoked", BOB)]


def test_a_budget_from_the_api_ends_when_it_expires(
    fake: FakeSlackProcess, server: SlackServer
) -> None:
    body = {
        "tool": "issue_refund",
        "when": "args.customer_id == 'c9'",
        "by": ANN,
        "reason": "VIP",
        "max_calls": 5,
        "expires_in_seconds": 15,
        "channel": APPROVALS,
    }
    status, made = server.api("POST", "/v1/envelopes", body | {"by": EVE})
    assert status == 403, made  # not an approver: nothing handed out
    status, made = server.api("POST", "/v1/envelopes", body | {"max_calls": 0})
    assert status == 400, made
    status, made = server.api("POST", "/v1/envelopes", body)
    assert status == 201, made
    assert (made["status"], made["used_calls"], made["author"]) == ("active", 0, ANN)
    assert "0 of 5 refunds used" in live_text(fake, "of 5 refunds")
    refund(server, "vip", 9000, customer="c9")
    assert settled(server, "vip") == "done"
    assert approved_by_envelope(server, "vip") == made["id"]
    assert "expired" in live_text(fake, "expired")
    status, now = server.api("GET", f"/v1/envelopes/{made['id']}")
    assert (status, now["status"], now["used_calls"]) == (200, "expired", 1)
    refund(server, "vip-later", 9000, customer="c9")
    assert settled(server, "vip-later") == "waiting_approval"
    actions = [e["action"] for e in audit(server)]
    assert actions == ["envelope_made", "envelope_expired"]
    status, listed = server.api("GET", "/v1/envelopes")
    assert [e["id"] for e in listed["envelopes"]] == [made["id"]]
    status, gone = server.api("GET", "/v1/envelopes/env_nope")
    assert status == 404, gone


def test_a_budget_for_an_effect_nothing_undoes_waits_for_a_second_writer(
    fake: FakeSlackProcess, server: SlackServer
) -> None:
    said = slash_text(
        server, 'envelope send_gift when="args.amount_cents <= 2000" calls=2 reason=apology', BOB
    )
    assert "` proposed: send" in said
    envelope_id = envelope_of(said)
    assert "needs a second writer" in slash_text(server, f"envelope confirm {envelope_id}", BOB)
    assert live(fake) == []  # nothing approves yet, so nothing to show
    assert "` active: send" in slash_text(server, f"envelope confirm {envelope_id}", ANN)
    assert "0 of 2 gifts used" in live_text(fake, "gifts used")
    actions = [(e["action"], e["actor"]) for e in audit(server)]
    assert actions == [("envelope_made", BOB), ("envelope_confirmed", ANN)]
