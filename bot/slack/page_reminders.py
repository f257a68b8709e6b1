"""Reminders under the pages nobody acknowledged: a job on the runtime's scheduler that, by
the runtime's clock, queues a `page_reminded` outbox row for each posted, unacknowledged page
nobody was told about for `every` (the database does it in one statement, so two processes at
once remind once), then wakes the sender."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY
from dataclasses import dataclass
from datetime import timedelta

from runtime.deliveries import Deliveries
from runtime.scheduler import Timers

JOB = "signoff-page-reminders"
CHECK_EVERY = 60.0
"""Seconds between looks, at most: a reminder is never more than this late."""


@dataclass(eq=False)
class PageReminders:
    deliveries: Deliveries
    every: timedelta
    timers: Timers
    wake: Callable[[], None]
    _: KW_ONLY
    check_every: float | None = None
    """Seconds between looks; None: `CHECK_EVERY`, or `every` when that is shorter."""

    def start(self) -> None:
        seconds = self.check_every or min(CHECK_EVERY, self.every.total_seconds())
        self.timers.every(seconds, self.remind, name=JOB)

    def stop(self) -> None:
        self.timers.cancel(JOB)

    async def remind(self) -> int:
        """Queue the reminders due now; how many."""
        now = self.timers.clock()
        queued = await self.deliveries.remind_open_pages(now=now, before=now - self.every)
        if queued:
            self.wake()
        return queued
