"""The write bodies of cool-off and undo (issue 42.6), beside `store.core`: each is one
compare-and-set on the approval with what it announces (the card's update, an audit event)
in the same transaction, so two clicks at once, or a cancel as the cool-off ends, change
the approval once."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from store import announce
from store import rows
from store.core import Body
from store.core import Stmt
from store.core import insert_event
from store.records import Approval
from store.records import AuditEvent

Row = Mapping[str, Any]


def advance(
    params: dict[str, Any], cool_off: float | None, undo: float | None, event: AuditEvent
) -> Body[Approval]:
    """Start the approval's cool-off if it has none yet (`cool_off` seconds), then claim the
    call to run if the cool-off is over (or there is none): the approval as it is after."""
    if cool_off is not None:
        started = yield Stmt("start_cool_off", params | {"seconds": cool_off}, "count")
        if started:
            yield announce.outbox("approval_waiting", params["id"], {"why": "cool_off"})
            yield from insert_event(event)
    claim = params | {"undo_seconds": undo}
    if (yield Stmt("claim_cool_off", claim, "count")):  # the card loses Cancel (Undo: later)
        yield announce.outbox("approval_waiting", params["id"], {"why": "ran"})
    row = yield Stmt("get_approval", {"id": params["id"]}, "one")
    return rows.approval_from_row(row)


def cancel(params: dict[str, Any], event: AuditEvent) -> Body[bool]:
    """A person cancels the call in its cool-off: True if this cancel did (it never runs)."""
    if not (yield Stmt("cancel_cool_off", params, "count")):
        return False
    yield announce.outbox("approval_waiting", params["id"], {"why": "cool_off_cancelled"})
    yield from insert_event(event)
    return True


def claim_undo(params: dict[str, Any], events: Sequence[AuditEvent]) -> Body[bool]:
    """A person undoes the call that ran: True for the one click that may (its effect
    completed, the window open, nobody undoing it or before)."""
    if not (yield Stmt("claim_undo", params, "count")):
        return False
    yield announce.outbox("approval_waiting", params["id"], {"why": "undoing"})
    for event in events:
        yield from insert_event(event)
    return True
