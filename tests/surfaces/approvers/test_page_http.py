"""The approvals page over plain HTTP, signed in through a real OpenID Connect provider:
only a signed session sees anything, every POST needs the session's CSRF token, a person
decides only what the approval's authority lets them (the same refusals as Slack), and the
page says so when no provider is configured."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.approvers_support import BOB
from support.approvers_support import BOB_MAIL
from support.approvers_support import EVE_MAIL
from support.approvers_support import REQ_MAIL
from support.approvers_support import Clients
from support.approvers_support import PageServer
from support.approvers_support import csrf_of
from support.approvers_support import page_server
from support.approvers_support import sign_in
from support.approvers_support import wait_until

pytestmark = pytest.mark.slow  # real processes: the provider and `signoff serve`

POLICY = """
[policies.tools.issue_refund]
approvers = ["U0BOB", "eve@example.com"]
allow_edit = true
"""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[PageServer]:
    with page_server(tmp_path, POLICY) as server:
        yield server


def test_only_a_signed_in_approver_decides_and_every_post_needs_its_csrf_token(
    server: PageServer, clients: Clients
) -> None:
    server.start_run("run-page")
    approval = server.pending("run-page")
    decide = f"{server.base}/approvals/{approval['id']}/decide"

    # no session: off to sign in; a forged cookie is no session either
    anonymous = clients.new()
    assert anonymous.get(server.base + "/approvals").headers["location"] == "/approvals/login"
    anonymous.cookies.set("signoff_session", "eyJwIjoiVTBCT0IifQ.forged.sig")
    assert anonymous.post(decide, data={"decision": "approved"}).status_code == 303

    bob = sign_in(clients, server.base, BOB_MAIL)
    listed = bob.get(server.base + "/approvals").text
    assert approval["id"] in listed
    assert "Who may decide" in listed
    assert "Refund $" in listed

    # a POST without the session's CSRF token (another site's form) changes nothing
    refused = bob.post(decide, data={"decision": "approved", "csrf": "not-the-token"})
    assert refused.status_code == 403
    assert server.approval(approval["id"])["state"] == "pending"

    # the requester signs in: nothing waits for them, and their own approval is refused
    requester = sign_in(clients, server.base, REQ_MAIL)
    theirs = requester.get(server.base + "/approvals").text
    assert approval["id"] not in theirs
    own = requester.post(decide, data={"decision": "approved", "csrf": csrf_of(theirs)})
    assert own.status_code == 400
    assert "forbids self-approval" in own.text
    assert server.approval(approval["id"])["state"] == "pending"

    # someone outside Slack, named by address in the policy, may decide from the page
    eve = sign_in(clients, server.base, EVE_MAIL)
    assert approval["id"] in eve.get(server.base + "/approvals").text

    # bob approves with his token: recorded under his Slack id, and the run goes on
    token = csrf_of(listed)
    done = bob.post(decide, data={"decision": "approved", "csrf": token})
    assert done.status_code == 200, done.text
    assert f"Approved by {BOB}" in done.text
    decided = server.approval(approval["id"])
    assert decided["state"] == "approved"
    assert decided["decided_by"] == BOB
    wait_until(lambda: server.get("/v1/runs/run-page")[1]["status"] == "done")

    # the same click again changes nothing and says who decided
    again = bob.post(decide, data={"decision": "declined", "csrf": token})
    assert again.status_code == 400
    assert "Already approved by" in again.text
    assert f"Approved by {BOB}" in bob.get(server.base + "/approvals").text  # recent decisions

    # signing out ends the session: the cookie no longer opens the page
    out = bob.post(server.base + "/approvals/logout", data={"csrf": token})
    assert out.status_code == 303
    assert bob.get(server.base + "/approvals").status_code == 303


def test_the_page_says_so_when_no_provider_is_configured(tmp_path: Path) -> None:
    server = PageServer(tmp_path, None)
    try:
        status, page = server.get("/approvals/login")
        assert status == 503
        assert "Sign-in is not configured" in page
        status, _ = server.get("/approvals")
        assert status == 503  # redirected to the sign-in page, which says why
    finally:
        assert server.stop() == 0, server.log.read_text()
