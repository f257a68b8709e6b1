"""Delivering the e-mail rows of the outbox (`email_requested`, `email_reminded`): one
message per approver address, with the card and one link per decision.

The rows are written with the approval (or its reminder) in the same transaction
(`store.announce.emails`) and sent by their own `OutboxSender`, with the same claims and
backoff as Slack's: an SMTP server that is down or slow delays the message, never the run,
and never another address's message. Every attempt is audited as `email_attempt` (to whom,
and what went wrong), which the approval's deliveries list. A person away is not e-mailed:
their delegate is, with links that decide as the delegate, for them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field

from bot.addresses import People
from bot.decision_links import Links
from bot.email import message
from bot.email.smtp import Smtp
from bot.outbox import Attempt
from bot.outbox import Undeliverable
from runtime import Runtime
from runtime.display import Display
from runtime.queries import NOT_FOUND
from runtime.records import Approval
from runtime.records import ApprovalState
from runtime.records import AuditEvent
from runtime.records import OutboxItem

log = logging.getLogger("signoff.email")
ACTION = "email_attempt"


@dataclass
class EmailDelivery:
    rt: Runtime
    smtp: Smtp | None
    """None: no `[email]` host; each row is given up, saying so."""
    links: Links
    people: People
    sender: str
    public_url: str
    displays: Mapping[str, Display] = field(default_factory=dict)

    async def __call__(self, attempt: Attempt) -> None:
        item = attempt.item
        try:
            approval = await self.rt.queries.approval(str(item.detail["approval_id"]))
        except NOT_FOUND:
            return  # pruned: nothing to ask
        if approval.state != ApprovalState.PENDING:
            return  # decided meanwhile: nothing to ask
        named = str(item.detail["to"])
        person, for_person = await self._route(named)
        address = self.people.address_of(person)
        if self.smtp is None:
            raise Undeliverable("no [email] host is configured; the approver decides on the page")
        if address is None:
            why = f"{person}, {named}'s delegate, has no e-mail address ([people])"
            await self._audit(item, approval, named, why)
            raise Undeliverable(why)
        letter = message.Letter(
            approval=approval,
            to=address,
            links=self._urls(approval.id, person),
            kind=_kind(item),
            display=self.displays.get(approval.tool),
            task=await self._task(approval),
            authority=self.rt.authority(approval),
            on_behalf_of=for_person,
        )
        try:
            await self.smtp.send(message.build(letter, sender=self.sender))
        except Exception as exc:
            await self._audit(item, approval, address, f"{type(exc).__name__}: {exc}")
            raise
        await self._audit(item, approval, address, None)
        log.info("e-mailed %s about approval %s (%s)", address, approval.id, letter.kind)

    async def _route(self, person: str) -> tuple[str, str | None]:
        """Whom to e-mail for `person`: their delegate while they are away (and for whom)."""
        for away in await self.rt.away():
            if away.person == person:
                return away.delegate, person
        return person, None

    def _urls(self, approval_id: str, person: str) -> dict[str, str]:
        base = self.public_url.rstrip("/")
        tokens = self.links.make(approval_id, person)
        return {decision: f"{base}/approvals/mail/{token}" for decision, token in tokens.items()}

    async def _task(self, approval: Approval) -> str | None:
        run = await self.rt.find_run(approval.run_id)
        return run.task if run is not None else None

    async def _audit(
        self, item: OutboxItem, approval: Approval, to: str, error: str | None
    ) -> None:
        detail = {
            "attempt": item.attempts,
            "url": f"mailto:{to}",
            "to": to,
            "kind": _kind(item),
            "state": ApprovalState.PENDING.value,
            "error": error,
        }
        event = AuditEvent(
            action=ACTION,
            actor="signoff",
            run_id=approval.run_id,
            approval_id=approval.id,
            detail=detail,
            at=self.rt.clock(),
        )
        await self.rt.deliveries.record_event(event)


def _kind(item: OutboxItem) -> str:
    if item.topic == "email_requested":
        return "request"
    return "escalation" if item.detail.get("escalated") else "reminder"
