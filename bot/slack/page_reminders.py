"""Reminders under the pages nobody acknowledged: a job on the runtime's scheduler that, by
the runtime's clock, queues a `page_reminded` outbox row for each posted, unacknowledged page
nobody was told about for `every` (the database does it in one statement, so two processes at
once remind once), then wakes the sender."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from runtime.deliveries import Deliveries
from runtime.scheduler import Timers

JOB = "signoff-page-reminders"
CHECK_EVERY = 60.0
"""Seconds between looks, at most: a reminder is never more than this late."""


class PageReminders:
    def __init__(
        self,
        deliveries: Deliveries,
        every: timedelta,
        timers: Timers,
        wake: Callable[[], None],
        *,
        check_every: float | None = None,
    ) -> None:
        self.deliveries = deliveries
        self.every = every
        self.timers = timers
        self.wake = wake
        self.check_every = check_every or min(CHECK_EVERY, every.total_seconds())

    def start(self) -> None:
        self.timers.every(self.check_every, self.remind, name=JOB)

    def stop(self) -> None:
        self.timers.cancel(JOB)

    async def remind(self) -> int:
        """Queue the reminders due now; how many."""
        now = self.timers.clock()
        queued = await self.deliveries.remind_open_pages(now=now, before=now - self.every)
        if queued:
            self.wake()
        return queued
