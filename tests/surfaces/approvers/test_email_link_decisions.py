"""An e-mailed link is used only by the decision it carries (issue 43.2): the link and the
decision are recorded in one transaction. A decision the runtime refuses (here: a policy
that wants a passkey for approving) leaves the message's links as they were, so its other
link still decides; two POSTs of one link at once decide once. `signoff serve` as a real
process, sending through a real SMTP server (aiosmtpd)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.approvers_support import EVE_MAIL
from support.approvers_support import PageServer
from support.approvers_support import wait_until
from support.helpers import free_port
from support.smtp_support import Inbox
from support.smtp_support import SmtpServer
from support.smtp_support import config
from support.smtp_support import links
from support.smtp_support import parts

pytestmark = pytest.mark.slow  # a real `signoff serve`

POLICY = """
[policies.tools.issue_refund]
approvers = ["eve@example.com"]

[[policies.tools.issue_refund.rules]]
when = "args.amount_cents > 1000000"
label = "over $10,000"
step_up = "passkey"
"""
RACES = 4


@pytest.fixture
def mail(tmp_path: Path) -> Iterator[tuple[PageServer, Inbox]]:
    port = free_port()
    with SmtpServer(port) as inbox:
        server = PageServer(tmp_path, None, config(port) + POLICY)
        try:
            yield server, inbox
        finally:
            assert server.stop() == 0, server.log.read_text()


def ask(server: PageServer, order: str, amount_cents: int) -> str:
    body = {
        "tool": "issue_refund",
        "args": {"order_id": order, "amount_cents": amount_cents},
        "requested_by": "U0REQ",
    }
    status, answer = server.api("POST", "/v1/approvals", body)
    assert status in (200, 201), answer
    return str(answer["id"])


def links_for(inbox: Inbox, approval_id: str) -> dict[str, str]:
    def came() -> dict[str, str] | None:
        for message in inbox.received:
            plain = parts(message)[0]
            if approval_id in plain:
                return links(plain)
        return None

    return dict(wait_until(came))


def decided_events(server: PageServer, approval_id: str) -> list[str]:
    _, trail = server.get(f"/v1/audit?approval_id={approval_id}")
    return [e["action"] for e in trail["events"] if e["action"].startswith("approval_")]


def test_a_refused_decision_leaves_the_link_unused(mail: tuple[PageServer, Inbox]) -> None:
    server, inbox = mail
    approval_id = ask(server, "o-big", 5_000_000)  # over $10,000: approving needs a passkey
    link = links_for(inbox, approval_id)

    with httpx.Client(timeout=30) as eve:
        refused = eve.post(link["approved"])
        assert refused.status_code == 400, refused.text
        assert "passkey" in refused.text
        assert server.approval(approval_id)["state"] == "pending"

        # not burnt: both links still open their confirmation, and the other one decides
        for url in link.values():
            shown = eve.get(url)
            assert shown.status_code == 200, shown.text
            assert 'id="confirm"' in shown.text
        done = eve.post(link["declined"], data={"reason": "too much for one refund"})
        assert done.status_code == 200, done.text
        assert f"Declined by {EVE_MAIL}" in done.text

        # now the message's links are used
        again = eve.post(link["approved"])
        assert again.status_code == 409
        assert "link is used" in again.text
    decided = server.approval(approval_id)
    assert (decided["state"], decided["decided_by"]) == ("declined", EVE_MAIL)
    assert decided_events(server, approval_id) == ["approval_requested", "approval_declined"]


def test_two_posts_of_one_link_at_once_decide_once(mail: tuple[PageServer, Inbox]) -> None:
    server, inbox = mail
    asked = [ask(server, f"o{n}", 2500 + n) for n in range(RACES)]
    for approval_id in asked:
        answers = race(links_for(inbox, approval_id)["approved"])
        statuses = sorted(a.status_code for a in answers)
        assert statuses == [200, 409], [a.text[:300] for a in answers]
        assert "link is used" in next(a.text for a in answers if a.status_code == 409)
        assert decided_events(server, approval_id) == ["approval_requested", "approval_approved"]
        assert server.approval(approval_id)["decided_by"] == EVE_MAIL


def race(url: str) -> list[httpx.Response]:
    """Two POSTs of `url`, let go at once from two threads."""
    start = threading.Barrier(2)
    answers: list[httpx.Response] = []

    def post() -> None:
        with httpx.Client(timeout=30) as client:
            start.wait()
            answers.append(client.post(url))

    racers = [threading.Thread(target=post) for _ in range(2)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join()
    return answers
