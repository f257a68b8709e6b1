"""Effects two runs share (docs/architecture.md, "A shared effect has dependents"): a run
handed another run's effect (the same idempotency key with the same arguments: the ledger's
repeat in a lineage, or, across lineages, the outside system's, which dedupes by the key)
relies on it. The reuse is recorded, with its audit event, in the transaction that hands the
effect over; when the effect is compensated all the same, each run relying on it is marked
once, with an audit event on its timeline and a note for its thread (`run_noted`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from store import announce
from store import rows
from store.body import Body
from store.body import Stmt
from store.digest import packed
from store.records import SYSTEM_ACTOR
from store.records import AuditEvent
from store.records import Effect
from store.records import EffectReuse
from store.records import Reversibility


def shared_effect(effect: Effect, key: str) -> Body[Effect | None]:
    """The effect in another lineage under this key with the same arguments that may have
    happened: the outside system dedupes by the key, so this one does what that one did."""
    if effect.reversibility == Reversibility.READ:
        return None
    digest = packed(effect.digest)
    params = {"idempotency_key": key, "lineage_id": effect.lineage_id, "args_digest": digest}
    row = yield Stmt("shared_effect_by_key", params, "one")
    return None if row is None else rows.effect_from_row(row)


def reused(run_id: str, call_id: str, prior: Effect, at: datetime) -> Body[None]:
    """This run's call is handed another run's effect: it relies on it (docs/architecture.md,
    "A shared effect has dependents"), recorded with its audit event. A run repeating its own
    effect relies on nobody."""
    if prior.run_id == run_id:
        return
    reuse = EffectReuse(
        run_id=run_id,
        call_id=call_id,
        from_run_id=prior.run_id,
        from_call_id=prior.call_id,
        tool=prior.tool,
        idempotency_key=prior.idempotency_key,
        at=at,
    )
    yield Stmt("insert_effect_reuse", rows.reuse_params(reuse))
    detail = {
        "call_id": call_id,
        "tool": prior.tool,
        "from_run": prior.run_id,
        "from_call": prior.call_id,
        "idempotency_key": prior.idempotency_key,
    }
    event = AuditEvent(
        action="effect_reused", actor=SYSTEM_ACTOR, run_id=run_id, at=at, detail=detail
    )
    yield Stmt("insert_event", rows.event_params(event))


def mark_undone(marks: Sequence[tuple[EffectReuse, AuditEvent]]) -> Body[int]:
    """Each reuse whose effect was compensated: marked once, and then its run's audit event
    and the note for its thread. How many were marked now (not before)."""
    marked = 0
    for reuse, event in marks:
        params = {"run_id": reuse.run_id, "call_id": reuse.call_id, "at": rows.ts(event.at)}
        if not (yield Stmt("mark_reuse_undone", params, "count")):
            continue
        yield Stmt("insert_event", rows.event_params(event))
        about = event.run_id or reuse.run_id  # the run told: whoever else relied on it
        said = {"action": event.action, "actor": event.actor, **event.detail}
        yield announce.outbox("run_noted", about, said)
        marked += 1
    return marked
