"""The outbox sender: delivers the rows the database wrote with each change, with backoff.

A run never waits for it: the runtime only nudges it. Rows are claimed for a while, so two
processes never send one row at once, and a row whose sender died is claimed again once its
claim lapses. A failed row is retried later with capped, jittered backoff (the web client
has already retried rate limits and 5xx answers in place); a row that can never succeed
(an unknown channel, say) is given up with its reason, so it does not hold back the rows
of its subject behind it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

from store import Store
from store.records import OutboxItem

log = logging.getLogger("signoff.outbox")

Deliver = Callable[[OutboxItem], Awaitable[None]]
CLAIM_FOR = timedelta(seconds=60)
POLL_EVERY = 1.0
MAX_BACKOFF = 300.0
TURN_WAIT = 0.5  # seconds a row waiting for earlier rows of its subjects waits again


class Undeliverable(Exception):
    """Retrying this row cannot help (the message itself is invalid); give it up."""


class Misconfigured(Exception):
    """A person must fix something (a channel, a token, an invitation): keep the row, retry
    every minute at most, and say so at WARNING so it is seen."""


class WaitsItsTurn(Exception):
    """The row must wait for earlier rows about the same things; try again shortly."""


class OutboxSender:
    def __init__(
        self,
        store: Store,
        deliver: Deliver,
        *,
        owner: str,
        batch: int = 50,
        concurrency: int = 8,
        poll_every: float = POLL_EVERY,
        claim_for: timedelta = CLAIM_FOR,
    ) -> None:
        self.store = store
        self.deliver = deliver
        self.owner = owner
        self.batch = batch
        self.poll_every = poll_every
        self.claim_for = claim_for
        self._slots = asyncio.Semaphore(concurrency)
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def wake(self) -> None:
        """Something was just written: look now instead of at the next poll."""
        self._wake.set()

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="outbox sender")

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def send_due(self) -> int:
        """Deliver every row that is due now; how many were handled."""
        handled = 0
        while True:
            now = datetime.now(UTC)
            items = await self.store.claim_outbox(
                self.owner, now=now, until=now + self.claim_for, limit=self.batch
            )
            if not items:
                return handled
            # One claim holds at most one row per subject, so these may go out together.
            await asyncio.gather(*(self._send(item) for item in items))
            handled += len(items)

    async def _loop(self) -> None:
        while True:
            try:
                await self.send_due()
            except Exception:
                log.exception("outbox: sending failed; trying again shortly")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.poll_every)
            self._wake.clear()

    async def _send(self, item: OutboxItem) -> None:
        async with self._slots:
            try:
                await self.deliver(item)
            except Undeliverable as exc:
                log.warning("outbox: %s %s given up: %s", item.topic, item.subject_id, exc)
                await self.store.finish_outbox(
                    item.id, self.owner, at=datetime.now(UTC), error=str(exc)[:500]
                )
                return
            except WaitsItsTurn as exc:
                log.debug("outbox: %s %s waits its turn: %s", item.topic, item.subject_id, exc)
                await self.store.retry_outbox(
                    item.id, self.owner, after=TURN_WAIT, error=str(exc)[:500]
                )
                return
            except Misconfigured as exc:
                log.warning("outbox: %s %s waits: %s", item.topic, item.subject_id, exc)
                after = min(backoff(item.attempts), 60.0)
                await self.store.retry_outbox(
                    item.id, self.owner, after=after, error=str(exc)[:500]
                )
                return
            except Exception as exc:
                delay = backoff(item.attempts)
                log.info(
                    "outbox: %s %s failed (attempt %d), again in %.0f s: %r",
                    item.topic,
                    item.subject_id,
                    item.attempts,
                    delay,
                    exc,
                )
                await self.store.retry_outbox(
                    item.id, self.owner, after=delay, error=repr(exc)[:500]
                )
                return
            await self.store.finish_outbox(item.id, self.owner, at=datetime.now(UTC))
            log.info("outbox: %s %s delivered", item.topic, item.subject_id)


def backoff(attempts: int) -> float:
    """Seconds before the next try: doubling from 1 s, capped at 5 minutes, with jitter so a
    backlog after an outage does not come back as one burst."""
    ceiling = min(MAX_BACKOFF, 2.0 ** max(attempts - 1, 0))
    return random.uniform(ceiling / 2, ceiling)
