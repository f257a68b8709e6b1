"""`Deliveries`: the writes of the surfaces that deliver what the runtime announces (the Slack
outbox sender, its reconciler, the HTTP decision callbacks). Each is the bookkeeping of one
delivery: claiming an outbox row and marking it sent or due again, recording where a card
or page was posted, a callback's status and its audit event. Nothing here changes a run or
a decision. A worker that stepped aside for a newer schema claims no outbox row."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from runtime.runs import Aside
from store import Approval
from store import AuditEvent
from store import Store
from store import errors
from store.records import OutboxItem


class Deliveries:
    def __init__(self, store: Store, *, aside: Aside | None = None) -> None:
        self._store = store
        self._aside = aside

    # the outbox

    async def database_now(self) -> datetime:
        """The database's clock: it decides claims (a sender's own clock may be off)."""
        return await self._store.database_now()

    async def claim_outbox(
        self, owner: str, *, now: datetime, until: datetime, limit: int = 50, email: bool = False
    ) -> list[OutboxItem]:
        """Rows due now, claimed for `owner` until then (never two of one subject). None
        once this worker stepped aside. `email`: the e-mail rows (`email_*`), else the
        others. A claim that finds the schema newer than this Signoff knows makes it step
        aside (`SchemaTooNew` where no one watches for that)."""
        if self._aside is not None and self._aside.active:
            return []
        try:
            return await self._store.claim_outbox(
                owner, now=now, until=until, limit=limit, email=email
            )
        except errors.SchemaTooNew as newer:
            if self._aside is None:
                raise
            self._aside.seen(newer.details["found"], newer.details["supported"])
            return []

    async def finish_outbox(
        self, item_id: int, owner: str, *, at: datetime, error: str | None = None
    ) -> bool:
        return await self._store.finish_outbox(item_id, owner, at=at, error=error)

    async def retry_outbox(self, item_id: int, owner: str, *, after: float, error: str) -> bool:
        return await self._store.retry_outbox(item_id, owner, after=after, error=error)

    async def first_delivery(self, key: str, *, keep_for: float) -> bool:
        """Whether this is the first delivery of the inbound request `key` (Slack's event
        id, an interaction's trigger) to any process on this database within `keep_for`
        seconds; noted as handled either way."""
        return await self._store.note_inbound(key, keep_for=keep_for)

    async def forget_deliveries(self, *, limit: int = 1000) -> int:
        """Forget inbound requests past their time; how many."""
        return await self._store.forget_inbound(limit=limit)

    async def email_link_used(self, nonce: str) -> datetime | None:
        """When an e-mailed decision link was used; None if never."""
        return await self._store.email_link_used(nonce)

    async def release_outbox_claims(self, owner: str) -> int:
        """Give up this owner's claims (its rows are sent again at once)."""
        return await self._store.release_outbox_claims(owner)

    async def queue_home_refresh(self, subjects: Sequence[str]) -> int:
        """Queue a `home_stale` row for each subject (one person's App Home) that has none
        waiting; how many were queued."""
        return await self._store.queue_home_refresh(subjects)

    async def remind_open_pages(self, *, now: datetime, before: datetime) -> int:
        """Queue a reminder for each page nobody acknowledged since `before`."""
        return await self._store.remind_open_pages(now=now, before=before)

    # where a message went

    async def set_approval_message(
        self, approval_id: str, *, channel: str | None, ts: str | None, delivery: str
    ) -> None:
        await self._store.set_approval_message(
            approval_id, channel=channel, ts=ts, delivery=delivery
        )

    async def set_page_message(
        self, page_id: str, *, channel: str | None, ts: str | None, delivery: str
    ) -> None:
        await self._store.set_page_message(page_id, channel=channel, ts=ts, delivery=delivery)

    async def set_envelope_message(self, envelope_id: str, *, channel: str, ts: str) -> None:
        """Where an envelope's live message is (its burn-down is edited there)."""
        await self._store.set_envelope_message(envelope_id, channel=channel, ts=ts)

    async def adopt_message(self, kind: str, subject_id: str, *, channel: str, ts: str) -> bool:
        """Where an approval's or a page's message is, as a click on it says: recorded only
        if no message is (the click carries what a post's answer may have left out)."""
        return await self._store.adopt_message(kind, subject_id, channel=channel, ts=ts)

    # decision callbacks

    async def undelivered_callbacks(self) -> list[Approval]:
        return await self._store.undelivered_callbacks()

    async def set_callback_status(self, approval_id: str, status: str) -> None:
        await self._store.set_callback_status(approval_id, status)

    async def record_event(self, event: AuditEvent) -> None:
        """A delivery's own audit event (a callback delivered, or given up)."""
        await self._store.record_event(event)
