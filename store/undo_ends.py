"""The write bodies that end what an approval under `cool_off` or `undo_for` let run (issue
42.6), each in the transaction of what it announces: the call's effect ended (with its
result: a completed one opens the undo window, so Undo is never offered before the effect
is durable), and a person's undo ended (with the compensation's end: undone, or failed and
claimable again). Each is a compare-and-set and updates the card."""

from __future__ import annotations

from typing import Any

from store import announce
from store.base import Batch
from store.base import CallEnded
from store.base import UndoEnded
from store.body import Body
from store.body import Stmt


def ends(batch: Batch, test_now: float | None) -> Body[None]:
    """What the batch ends of approved calls and of people's undos."""
    for ended in batch.ended_calls:
        yield from call_ended(ended, test_now)
    if batch.undo_ended is not None:
        yield from undo_ended(batch.undo_ended, test_now)


def call_ended(ended: CallEnded, test_now: float | None) -> Body[None]:
    """Record how the effect of the approved call ended; a completed one opens its window."""
    params: dict[str, Any] = {
        "id": ended.approval_id,
        "status": ended.status.value,
        "test_now": test_now,
    }
    if (yield Stmt("record_ran_outcome", params, "count")):
        yield announce.outbox("approval_waiting", ended.approval_id, {"why": ended.status.value})


def undo_ended(ended: UndoEnded, test_now: float | None) -> Body[None]:
    """A person's undo ended: the call reads undone, or the undo failed (and may be tried
    again)."""
    params: dict[str, Any] = {"id": ended.approval_id, "test_now": test_now}
    if ended.error is None:
        changed = yield Stmt("finish_undo", params, "count")
    else:
        changed = yield Stmt("fail_undo", params | {"error": ended.error}, "count")
    if changed:
        why = "undone" if ended.error is None else "undo_failed"
        yield announce.outbox("approval_waiting", ended.approval_id, {"why": why})
