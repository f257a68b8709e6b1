"""E-mail for approvers outside Slack, end to end: `signoff serve` as a real process sends
through a real SMTP server (aiosmtpd); the e-mailed links open a confirmation page whose GET
(a mail scanner) decides nothing and whose POST decides once; used, expired and foreign
links change nothing and say which; an SMTP server that is down delays the message (retried,
visible in the approval's deliveries), never the run."""

from __future__ import annotations

from datetime import UTC
from datetime import datetime
from datetime import timedelta
from pathlib import Path

import pytest
from support.approvers_support import EVE_MAIL
from support.approvers_support import Clients
from support.approvers_support import PageServer
from support.approvers_support import csrf_of
from support.approvers_support import oidc_provider
from support.approvers_support import sign_in
from support.approvers_support import wait_until
from support.helpers import free_port
from support.smtp_support import SmtpServer
from support.smtp_support import config
from support.smtp_support import links
from support.smtp_support import parts

pytestmark = pytest.mark.slow  # real processes: the provider and `signoff serve`

POLICY = """
[policies.tools.issue_refund]
approvers = ["U0BOB", "eve@example.com"]
"""


def serve(tmp_path: Path, issuer: str, smtp_port: int, policy: str = POLICY) -> PageServer:
    return PageServer(tmp_path, issuer, config(smtp_port) + policy)


def emails(server: PageServer, approval_id: str) -> list[dict[str, object]]:
    found = server.get(f"/v1/approvals/{approval_id}/deliveries")[1]["deliveries"]
    return [d for d in found if d["channel"] == "email"]


def test_an_emailed_link_decides_only_when_confirmed_and_only_once(
    tmp_path: Path, clients: Clients
) -> None:
    port = free_port()
    with oidc_provider(tmp_path) as issuer, SmtpServer(port) as inbox:
        server = serve(tmp_path, issuer, port)
        try:
            server.start_run("run-mail")
            approval = server.pending("run-mail")
            [message] = inbox.to(EVE_MAIL)
            plain, rich = parts(message)
            assert message["Subject"].startswith("Approval needed: ")
            assert "Refund" in plain
            assert approval["id"] in plain
            link = links(plain)
            assert link["approved"] in rich.replace("&amp;", "&")
            assert link["approved"] != link["declined"]
            assert inbox.to(EVE_MAIL)
            assert not [m for m in inbox.received if m["To"] != EVE_MAIL]

            # a mail scanner follows both links: each shows a confirmation, decides nothing
            scanner = clients.new()
            for url in link.values():
                shown = scanner.get(url)
                assert shown.status_code == 200, shown.text
                assert 'id="confirm"' in shown.text
                assert 'method="post"' in shown.text
            assert server.approval(approval["id"])["state"] == "pending"

            # an altered link is foreign: GET and POST both say so, nothing changes
            token = link["approved"].rsplit("/", 1)[1]
            forged = link["approved"].replace(token, token[:-3] + "abc")
            for method in ("GET", "POST"):
                answer = scanner.request(method, forged)
                assert answer.status_code == 403
                assert "link is foreign" in answer.text
            assert server.approval(approval["id"])["state"] == "pending"

            # the button's POST decides, as the address the link was sent to
            eve = clients.new()
            done = eve.post(link["approved"])
            assert done.status_code == 200, done.text
            assert "Approved by eve@example.com" in done.text
            decided = server.approval(approval["id"])
            assert decided["state"] == "approved"
            assert decided["decided_by"] == EVE_MAIL
            wait_until(lambda: server.get("/v1/runs/run-mail")[1]["status"] == "done")

            # the same POST again, and the other link of the message: used, nothing changes
            for url in (link["approved"], link["declined"]):
                again = eve.post(url, data={"reason": "changed my mind"})
                assert again.status_code == 409
                assert "link is used" in again.text
            assert server.approval(approval["id"]) == decided

            # the delivery is in the approval's deliveries
            [sent] = emails(server, approval["id"])
            assert sent["delivered"] is True
            assert sent["url"] == f"mailto:{EVE_MAIL}"
        finally:
            assert server.stop() == 0, server.log.read_text()


def test_links_expire_with_their_approval_and_reminders_come_by_email(
    tmp_path: Path, clients: Clients
) -> None:
    port = free_port()
    policy = POLICY + 'timeout = "6s"\nremind_every = "2s"\nmax_reminders = 1\n'
    with oidc_provider(tmp_path) as issuer, SmtpServer(port) as inbox:
        server = serve(tmp_path, issuer, port, policy)
        try:
            server.start_run("run-late")
            approval = server.pending("run-late")
            request, reminder = inbox.to(EVE_MAIL, count=2)
            assert reminder["Subject"].startswith("Reminder: approval needed: ")
            link = links(parts(request)[0])
            later = links(parts(reminder)[0])
            assert later["approved"] != link["approved"]  # each message its own links
            wait_until(lambda: server.approval(approval["id"])["state"] == "declined")
            assert server.approval(approval["id"])["reason"] == "expired"
            for url in (link["approved"], later["declined"]):
                for method in ("GET", "POST"):
                    answer = clients.new().request(method, url)
                    assert answer.status_code == 410
                    assert "link is expired" in answer.text
            assert server.approval(approval["id"])["decided_by"] == "signoff"
        finally:
            assert server.stop() == 0, server.log.read_text()


def test_an_smtp_server_that_is_down_delays_the_message_never_the_run(tmp_path: Path) -> None:
    port = free_port()
    with oidc_provider(tmp_path) as issuer:
        server = serve(tmp_path, issuer, port)
        try:
            server.start_run("run-down")
            approval = server.pending("run-down")
            failed = wait_until(lambda: emails(server, approval["id"]))
            assert failed[0]["delivered"] is False
            assert failed[0]["error"]
            run = server.get("/v1/runs/run-down")[1]
            assert run["status"] == "waiting_approval"
            with SmtpServer(port) as inbox:
                [message] = inbox.to(EVE_MAIL, within=60)
                assert links(parts(message)[0])
                tried = wait_until(
                    lambda: [d for d in emails(server, approval["id"]) if d["delivered"]]
                )
            attempts = emails(server, approval["id"])
            assert attempts[-1] == tried[0]
            assert len(attempts) >= 2
            assert [d["attempt"] for d in attempts] == sorted(d["attempt"] for d in attempts)
            assert server.approval(approval["id"])["state"] == "pending"
        finally:
            assert server.stop() == 0, server.log.read_text()


def test_an_away_approver_s_mail_goes_to_their_delegate_who_decides_for_them(
    tmp_path: Path, clients: Clients
) -> None:
    carol = "carol@example.com"
    soon = datetime.now(UTC) + timedelta(days=30)
    port = free_port()
    with oidc_provider(tmp_path) as issuer, SmtpServer(port) as inbox:
        server = serve(tmp_path, issuer, port)
        try:
            eve = sign_in(clients, server.base, EVE_MAIL)
            token = csrf_of(eve.get(server.base + "/approvals").text)
            refused = eve.post(
                server.base + "/approvals/away",
                data={"csrf": token, "until": "2000-01-01T09:00", "delegate": carol},
            )
            assert refused.status_code == 400
            assert "has passed" in refused.text
            set_away = eve.post(
                server.base + "/approvals/away",
                data={"csrf": token, "until": f"{soon:%Y-%m-%dT%H:%M}", "delegate": carol},
            )
            assert set_away.status_code == 303, set_away.text
            assert f"{carol} decides for you" in eve.get(server.base + "/approvals").text

            server.start_run("run-away")
            approval = server.pending("run-away")
            [message] = inbox.to(carol)
            plain = parts(message)[0]
            assert f"You decide for: {EVE_MAIL}" in plain
            assert not [m for m in inbox.received if m["To"] == EVE_MAIL]
            done = clients.new().post(links(plain)["approved"])
            assert done.status_code == 200, done.text
            assert f"Approved by {carol} for {EVE_MAIL}" in done.text
            decided = server.approval(approval["id"])
            assert (decided["decided_by"], decided["decided_for"]) == (carol, EVE_MAIL)
            _, events = server.get(f"/v1/audit?approval_id={approval['id']}")
            [event] = [e for e in events["events"] if e["action"] == "approval_approved"]
            assert (event["actor"], event["detail"]["for"]) == (carol, EVE_MAIL)
        finally:
            assert server.stop() == 0, server.log.read_text()
