"""How the runtime tells the outside world what needs a human, without knowing who listens.

The bot implements `Notifier` with Slack; a webhook or e-mail notifier is another class.
The runtime calls a notifier only after the matching record is committed, and a notifier
failure never fails a run: delivery is tracked on the record and retried by the notifier.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from store import Approval
from store import Page
from store import Run

log = logging.getLogger("signoff.notifier")


class Notifier(Protocol):
    async def approval_requested(self, approval: Approval, run: Run | None) -> None: ...
    async def approval_decided(self, approval: Approval, run: Run | None) -> None: ...
    async def reminder_due(
        self, approval: Approval, run: Run | None, *, escalated: bool
    ) -> None: ...
    async def effect_needs_human(self, page: Page, run: Run | None) -> None: ...
    async def run_finished(self, run: Run) -> None: ...


class NullNotifier:
    """Tells nobody."""

    async def approval_requested(self, approval: Approval, run: Run | None) -> None:
        return None

    async def approval_decided(self, approval: Approval, run: Run | None) -> None:
        return None

    async def reminder_due(self, approval: Approval, run: Run | None, *, escalated: bool) -> None:
        return None

    async def effect_needs_human(self, page: Page, run: Run | None) -> None:
        return None

    async def run_finished(self, run: Run) -> None:
        return None


class FanOut:
    """Tells several notifiers; one failing does not stop the others."""

    def __init__(self, notifiers: Sequence[Notifier]) -> None:
        self.notifiers = list(notifiers)

    async def approval_requested(self, approval: Approval, run: Run | None) -> None:
        for n in self.notifiers:
            await safely(n.approval_requested(approval, run))

    async def approval_decided(self, approval: Approval, run: Run | None) -> None:
        for n in self.notifiers:
            await safely(n.approval_decided(approval, run))

    async def reminder_due(self, approval: Approval, run: Run | None, *, escalated: bool) -> None:
        for n in self.notifiers:
            await safely(n.reminder_due(approval, run, escalated=escalated))

    async def effect_needs_human(self, page: Page, run: Run | None) -> None:
        for n in self.notifiers:
            await safely(n.effect_needs_human(page, run))

    async def run_finished(self, run: Run) -> None:
        for n in self.notifiers:
            await safely(n.run_finished(run))


async def safely(notification: object) -> None:
    """Await a notification; log instead of raising, since the record is already durable."""
    try:
        await notification  # type: ignore[misc]
    except Exception:
        log.exception("notifier failed; the record stays pending delivery")
