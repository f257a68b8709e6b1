"""Whether a run's rollback (or saga) began and never ended: its intent is an audit event
written before anything is undone, and recovery finishes what it names."""

from __future__ import annotations

from store import AuditEvent
from store import Store
from store.base import UNDO_ENDED
from store.base import UNDO_STARTED


async def unfinished(store: Store, run_id: str) -> AuditEvent | None:
    """The intent of this run's rollback (or saga) that began and never ended, if any."""
    intent = None
    for event in await store.list_events(run_id=run_id):
        if event.action == UNDO_STARTED:
            intent = event
        elif event.action in UNDO_ENDED:
            intent = None
    return intent
