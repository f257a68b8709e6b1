"""Telling the outside world: every notification the runtime sends goes through here, logged,
and a notifier that fails never fails the run (`safely`)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from runtime.notifier import Notifier
from runtime.notifier import safely
from store import Approval
from store import Page
from store import Run
from store import Store
from store import errors as store_errors

log = logging.getLogger("signoff.runtime")


class Announcer:
    def __init__(
        self, notifier: Notifier, store: Store, *, on_due: Callable[[datetime], None]
    ) -> None:
        self.notifier = notifier
        self.store = store
        self.on_due = on_due
        """The scheduler's: told when a new deadline or reminder exists."""

    async def approval_requested(self, approval: Approval, run: Run | None) -> None:
        log.info(
            "approval %s requested: %s under policy %s%s",
            approval.id,
            approval.tool,
            approval.policy,
            f" (run {run.id})" if run else "",
            extra={
                "approval_id": approval.id,
                "run_id": approval.run_id,
                "event": "approval_requested",
            },
        )
        await safely(self.notifier.approval_requested(approval, run))
        due = [t for t in (approval.deadline, approval.next_reminder_at) if t is not None]
        if due:
            self.on_due(min(due))

    async def approval_decided(self, approval: Approval, run: Run | None) -> None:
        await safely(self.notifier.approval_decided(approval, run))

    async def reminder(self, approval: Approval, *, escalated: bool) -> None:
        run = None
        if approval.run_id is not None:
            try:
                run = await self.store.get_run(approval.run_id)
            except store_errors.NotFound:
                run = None
        await safely(self.notifier.reminder_due(approval, run, escalated=escalated))

    async def page(self, page: Page, run: Run | None) -> None:
        log.warning(
            "page %s: %s in run %s needs a human (%s)", page.id, page.tool, page.run_id, page.reason
        )
        await safely(self.notifier.effect_needs_human(page, run))

    async def run_finished(self, run: Run) -> None:
        await safely(self.notifier.run_finished(run))
