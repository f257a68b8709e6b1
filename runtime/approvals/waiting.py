"""Waiting in this process for an approval to be decided: one event per approval waited on,
set when a decision made here (any surface, a deadline) is announced. A decision made in
another process is not seen here; a waiter re-reads the approval to catch those."""

from __future__ import annotations

import asyncio
from collections import defaultdict

from runtime.notifier import NullNotifier
from store import Approval
from store import Run


class DecisionWaiters(NullNotifier):
    """Joined to the runtime's notifier at construction: told of every decision made here."""

    def __init__(self) -> None:
        self._events: defaultdict[str, set[asyncio.Event]] = defaultdict(set)

    async def approval_decided(self, approval: Approval, run: Run | None) -> None:
        for event in self._events.pop(approval.id, set()):
            event.set()

    async def wait(self, approval_id: str, seconds: float) -> None:
        """Until the approval is decided here or `seconds` pass, whichever is first."""
        event = asyncio.Event()
        self._events[approval_id].add(event)
        try:
            # Not `asyncio.wait_for`: on Python 3.11 a cancel in the loop turn the decision
            # lands in is swallowed, and the waiter (an HTTP long poll) goes on as if not
            # cancelled (as the run queue did: issue 44.4).
            async with asyncio.timeout(seconds):
                await event.wait()
        except TimeoutError:
            pass
        finally:
            waiting = self._events.get(approval_id)
            if waiting is not None:
                waiting.discard(event)
                if not waiting:
                    del self._events[approval_id]
