"""How far this worker's clock is from the database's, measured at start-up and periodically.

The database's clock decides leases, deadlines and claims (issue 33); a worker's own clock is
used for what it shows and stamps. A worker whose clock is off still works correctly, but
what it shows and stamps is off too, so the skew is made visible: above `warn_at` seconds a
warning with the figure (each time it crosses), and above `unready_at` (a quarter of the lease
by default) the worker reports not ready, so an orchestrator stops sending it work.

The measurement takes the middle of the round trip: `skew = (before + after) / 2 - db_now`,
positive when this worker's clock is ahead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from store import Store

log = logging.getLogger("signoff.clock")

WARN_AT = 2.0


class ClockSkew:
    def __init__(
        self,
        store: Store,
        clock: Callable[[], datetime],
        *,
        unready_at: float,
        warn_at: float = WARN_AT,
        report: Callable[[float], None] | None = None,
    ) -> None:
        if unready_at <= 0 or warn_at <= 0:
            raise ValueError("clock skew thresholds are positive seconds")
        self.store, self.clock = store, clock
        self.warn_at, self.unready_at = min(warn_at, unready_at), unready_at
        self.report = report
        self.skew: float | None = None
        """Seconds this worker's clock is ahead of the database's (behind: negative)."""

    async def measure(self) -> float:
        before = self.clock()
        db_now = await self.store.database_now()
        after = self.clock()
        skew = ((before + (after - before) / 2) - db_now).total_seconds()
        was, self.skew = self.skew, skew
        if abs(skew) > self.warn_at and (was is None or abs(was) <= self.warn_at):
            log.warning(
                "this worker's clock is %+.1f s off the database's (%s); leases and deadlines "
                "follow the database's clock, but times this worker shows and stamps are off%s",
                skew,
                "ahead" if skew > 0 else "behind",
                "; not ready" if abs(skew) > self.unready_at else "",
            )
        elif abs(skew) <= self.warn_at and was is not None and abs(was) > self.warn_at:
            log.info("this worker's clock is back within %.1f s of the database's", self.warn_at)
        if self.report is not None:
            self.report(skew)
        return skew

    def problem(self) -> str | None:
        """Why this worker is not ready, if its clock is too far off; None otherwise."""
        if self.skew is None or abs(self.skew) <= self.unready_at:
            return None
        return (
            f"this worker's clock is {self.skew:+.1f} s off the database's "
            f"(more than {self.unready_at:g} s)"
        )
