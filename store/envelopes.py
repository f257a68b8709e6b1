"""Envelopes' rows and write bodies (the `envelopes` table, migration 0025), and the record
of each limit's definition; the holds that use an envelope up are `store.spend`'s.

Each write that changes an envelope is a compare-and-set with its audit event and the
outbox row of its live message in one transaction: an envelope is confirmed once, revoked
once, and its end announced once."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from store import announce
from store import rows
from store import spend
from store.body import Body
from store.body import Stmt
from store.core import changed_with_event
from store.core import insert_event
from store.records import AuditEvent
from store.records import Envelope

Row = Mapping[str, Any]

_ENVELOPE = rows.Columns(
    Envelope,
    (
        "id",
        "tool",
        "condition",
        "amount",
        "max_amount",
        "max_calls",
        "used_amount",
        "used_calls",
        "author",
        "reason",
        "state",
        "mode",
        "from_approval",
        "channel",
        "message_ts",
        "confirmed_by",
        "revoked_by",
        "ended",
    ),
    times=("created_at", "expires_at", "confirmed_at", "revoked_at"),
    flags=("needs_second",),
    unwritten=frozenset(
        {
            "used_amount",
            "used_calls",
            "message_ts",
            "confirmed_by",
            "confirmed_at",
            "revoked_by",
            "revoked_at",
            "ended",
        }
    ),
)
"""An envelope's row; its use, its message and its later compare-and-sets fill the rest."""
envelope_params, envelope_from_row = _ENVELOPE.params, _ENVELOPE.read


def create(envelope: Envelope, event: AuditEvent) -> Body[None]:
    """Store it with its audit event; an active one's live message is posted."""
    yield Stmt("insert_envelope", envelope_params(envelope))
    yield from insert_event(event)
    if envelope.state == "active":
        yield announce.outbox("envelope_opened", envelope.id)


def confirm(params: dict[str, Any], event: AuditEvent) -> Body[bool]:
    """A second writer's confirmation: active from now, and its live message posted."""
    if not (yield from changed_with_event(Stmt("confirm_envelope", params, "count"), event)):
        return False
    yield announce.outbox("envelope_opened", params["id"])
    return True


def revoke(params: dict[str, Any], event: AuditEvent) -> Body[bool]:
    if not (yield from changed_with_event(Stmt("revoke_envelope", params, "count"), event)):
        return False
    yield from spend.envelope_changed(params["id"], params["test_now"], every=0)
    return True


def end_expired(test_now: float | None) -> Body[list[str]]:
    """Mark each envelope that expired by the store's clock ended, once, with its audit
    event and the last edit of its live message."""
    found = yield Stmt("end_expired_envelopes", {"test_now": test_now}, "all")
    for envelope_id, at in found:
        event = AuditEvent(
            action="envelope_expired",
            actor="signoff",
            at=rows.utc(at),
            detail={"envelope_id": envelope_id},
        )
        yield from insert_event(event)
        yield from spend.envelope_changed(envelope_id, test_now, every=0)
    return [row[0] for row in found]


def record_limits(
    definitions: Mapping[str, str], events: Mapping[str, AuditEvent], at: float
) -> Body[list[str]]:
    """Keep each limit's definition; for each that changed (or is new), its audit event.
    Returns the names that changed."""
    changed = []
    for name, definition in sorted(definitions.items()):
        row = yield Stmt("limit_definition", {"name": name}, "one")
        if row is not None and row[0] == definition:
            continue
        params = {"name": name, "definition": definition, "changed_at": at}
        yield Stmt("upsert_limit_definition", params)
        event = events[name]
        if row is not None:
            event = event.model_copy(update={"detail": event.detail | {"was": json.loads(row[0])}})
        yield from insert_event(event)
        changed.append(name)
    return changed
