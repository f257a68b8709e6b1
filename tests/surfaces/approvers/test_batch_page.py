"""Batches on the approvals page over real HTTP, signed in through a real OpenID Connect
provider: bob ticks 21 pending refunds, one of them his own request, and approves them in
one POST. Twenty are decided, each its own decision with its own audit event and signed
receipt; his own is refused and named; no learned rule is made; and a batch without its
CSRF token, or a decline without a reason, changes nothing."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.approvers_support import BOB
from support.approvers_support import BOB_MAIL
from support.approvers_support import Clients
from support.approvers_support import PageServer
from support.approvers_support import ask
from support.approvers_support import page_server
from support.approvers_support import sign_in

pytestmark = pytest.mark.slow  # real processes: the provider and `signoff serve`

POLICY = """
[policies.tools.issue_refund]
approvers = ["U0BOB"]
"""
BATCH = 20


@pytest.fixture
def server(tmp_path: Path) -> Iterator[PageServer]:
    with page_server(tmp_path, POLICY) as server:
        yield server


def refund(n: int) -> dict[str, object]:
    return {"order_id": f"o{n}", "amount_cents": 100 + n}


def test_a_batch_of_twenty_is_twenty_decisions(
    server: PageServer, clients: Clients, tmp_path: Path
) -> None:
    asked = [ask(server, refund(n), "U0REQ") for n in range(BATCH)]
    own = ask(server, refund(99), BOB)  # bob's own request: the policy forbids self-approval

    bob = sign_in(clients, server.base, BOB_MAIL)
    listed = bob.get(server.base + "/approvals").text
    form = re.search(r'<details class="card batch" data-batch="issue_refund">.*?</details>', listed)
    assert form, listed[:3000]
    ticked = re.findall(r'name="approval" value="([^"]+)" checked', form[0])
    assert sorted(ticked) == sorted(asked)  # his own request is not offered
    csrf = re.search(r'name="csrf" value="([^"]+)"', form[0])
    assert csrf
    fields = {"approval": [*asked, own], "tool": "issue_refund"}

    # without the session's CSRF token, or declining without a reason: nothing changes
    forged = bob.post(
        server.base + "/approvals/batch", data=fields | {"decision": "approved", "csrf": "x"}
    )
    assert forged.status_code == 403
    unsaid = bob.post(
        server.base + "/approvals/batch",
        data=fields | {"decision": "declined", "csrf": csrf[1]},
    )
    assert unsaid.status_code == 400
    assert "Say why" in unsaid.text
    assert {server.approval(i)["state"] for i in [*asked, own]} == {"pending"}

    done = bob.post(
        server.base + "/approvals/batch",
        data=fields | {"decision": "approved", "csrf": csrf[1]},
    )
    assert done.status_code == 200, done.text
    assert f"Approved {BATCH} issue_refund requests, each on its own" in done.text
    assert f"1 not decided: {own}:" in done.text
    assert "forbids self-approval" in done.text

    receipts = set()
    for approval_id in asked:
        decided = server.approval(approval_id)
        assert (decided["state"], decided["decided_by"]) == ("approved", BOB)
        _, trail = server.get(f"/v1/audit?approval_id={approval_id}")
        assert [e["action"] for e in trail["events"]].count("approval_approved") == 1
        status, receipt = server.get(f"/v1/approvals/{approval_id}/receipt")
        assert status == 200, receipt
        receipts.add(str(receipt))
    assert len(receipts) == BATCH  # each its own
    assert server.approval(own)["state"] == "pending"
    _, trail = server.get(f"/v1/audit?approval_id={own}")
    assert "approval_approved" not in [e["action"] for e in trail["events"]]

    with sqlite3.connect(tmp_path / "signoff.db") as db:  # a batch never makes a rule
        assert db.execute("SELECT count(*) FROM learned_rules").fetchone()[0] == 0
