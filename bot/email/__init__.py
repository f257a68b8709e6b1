"""E-mail for approvers outside Slack (docs/approvers.md, "By e-mail"): a policy that names
an address has each such approver e-mailed the card with one link per decision; the links
open a confirmation page on the approvals page (`bot.approvers.links`) whose button decides.

`email_sender` builds the outbox sender of the e-mail rows; `check_settings` refuses a
half-configured `[email]` before anything is opened.
"""

from __future__ import annotations

from datetime import timedelta

from bot import reading
from bot.addresses import People
from bot.decision_links import Links
from bot.email.sender import EmailDelivery
from bot.email.smtp import Smtp
from bot.outbox import OutboxNudge
from bot.outbox import OutboxSender
from bot.settings import ConfigError
from bot.settings import Settings
from bot.settings import secret
from runtime import Runtime
from runtime.records import Approval
from runtime.records import Page
from runtime.records import Run

__all__ = ["EmailNudge", "Links", "check_settings", "email_sender"]


def check_settings(settings: Settings) -> None:
    email, web = settings.email, settings.web
    if not email.host:
        return
    if not email.sender:
        raise ConfigError("[email] host needs from (the address messages are sent from)")
    if not web.public_url:
        raise ConfigError("[email] host needs public_url (where the links in e-mails point)")
    if not secret(web.session_secret):
        raise ConfigError(
            "[email] host needs SIGNOFF_SESSION_SECRET: it signs the links in e-mails, "
            "which must still hold after a restart and on every process"
        )


def email_sender(settings: Settings, rt: Runtime) -> OutboxSender:
    """The sender of the outbox's e-mail rows (each given up, saying why, without a host)."""
    email, web = settings.email, settings.web
    delivery = EmailDelivery(
        rt=rt,
        smtp=Smtp(email) if email.host else None,
        links=Links(secret(web.session_secret) or "unset"),
        people=People(web.people),
        sender=email.sender or "",
        public_url=web.public_url or "",
        displays=reading.displays(rt),
    )
    claim = max(settings.workers.outbox_claim_seconds, email.timeout * 3 + 1)
    return OutboxSender(
        rt.deliveries,
        delivery,
        owner=rt.worker_id,
        timers=rt.scheduler,
        claim_for=timedelta(seconds=claim),
        email=True,
    )


class EmailNudge(OutboxNudge):
    """Wakes the e-mail sender when the runtime tells of a new approval or reminder (their
    rows are written already); the e-mails say nothing of the rest."""

    async def approval_decided(self, approval: Approval, run: Run | None) -> None:
        return None

    async def effect_needs_human(self, page: Page, run: Run | None) -> None:
        return None

    async def run_finished(self, run: Run) -> None:
        return None
