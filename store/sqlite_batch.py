"""The body of one SQLite transaction for a `Batch`: fencing, compare-and-set on the history,
the effect ledger's claim by idempotency key, approvals, pages and audit events.

`commit_job` prepares every parameter on the caller's side; the returned function runs on
the writer's connection inside the group transaction (in its own savepoint).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from store import errors, queries, rows
from store.base import Batch, Committed
from store.records import Approval, Effect, Reversibility

Q = queries.load("sqlite")


def commit_job(batch: Batch) -> Callable[[sqlite3.Connection], Committed]:
    """Build the transaction body for a Batch; parameters are prepared before the writer runs."""
    _check_batch(batch)
    run_id = batch.run_id
    cps = [rows.checkpoint_params(cp) for cp in batch.checkpoints]
    finish = [rows.outcome_params(o) for o in batch.finish]
    start = [(e, rows.effect_params(e)) for e in batch.start]
    request = [(a, rows.approval_params(a)) for a in batch.request]
    pages = [rows.page_params(p) for p in batch.pages]
    settle = [
        {"run_id": run_id, "call_id": s.call_id, "by": s.by, "at": rows.ts(s.at)}
        for s in batch.settle_pages
    ]
    events = [rows.event_params(e) for e in batch.events]

    def job(conn: sqlite3.Connection) -> Committed:
        if batch.owner is not None or cps:
            _check_head(conn, run_id, batch.owner, cps)
        for params in finish:
            _finish_effect(conn, params)
        committed = Committed()
        for effect, params in start:
            prior, key = _claim_key(
                conn, effect.lineage_id, effect.idempotency_key, effect.reversibility
            )
            if prior is not None:
                committed.preempted[effect.call_id] = prior
                continue
            unsettled = None if effect.idempotent else _unsettled(conn, effect, key)
            if unsettled is not None:
                committed.blocked[effect.call_id] = unsettled
                continue
            if key != effect.idempotency_key:
                committed.keys[effect.call_id] = key
            conn.execute(Q["insert_effect"], params | {"idempotency_key": key})
        for approval, params in request:
            _request(conn, committed, approval, params)
        for params in pages:
            if conn.execute(Q["insert_page"], params).rowcount:
                committed.new_pages.append(params["id"])
        for params in settle:
            conn.execute(Q["settle_pages_of_call"], params)
        for params in events:
            conn.execute(Q["insert_event"], params)
        return committed

    return job


def _check_batch(batch: Batch) -> None:
    """Every record in a batch belongs to its run: the lease is checked for that run only."""
    records = (
        *batch.checkpoints,
        *batch.finish,
        *batch.start,
        *batch.request,
        *batch.pages,
        *(e for e in batch.events if e.run_id is not None),
    )
    strangers = {str(r.run_id) for r in records if r.run_id != batch.run_id}
    if strangers:
        raise errors.InvalidRecord(
            f"a batch for run {batch.run_id!r} holds records of {', '.join(sorted(strangers))}"
        )


def _request(
    conn: sqlite3.Connection, committed: Committed, approval: Approval, params: dict[str, Any]
) -> None:
    """Create an approval unless its call already happened or was declined in the lineage."""
    call = approval.call_id or approval.id
    if approval.lineage_id is not None and approval.idempotency_key is not None:
        done, _ = _claim_key(
            conn, approval.lineage_id, approval.idempotency_key, Reversibility.IRREVERSIBLE
        )
        if done is not None:
            committed.preempted[call] = done
            return
        declined = _declined_by_key(conn, approval)
        if declined is not None:
            committed.prior_decisions[call] = declined
            return
    conn.execute(Q["insert_approval"], params)


def _check_head(
    conn: sqlite3.Connection, run_id: str, owner: str | None, cps: list[dict[str, Any]]
) -> None:
    """Fence on the lease, compare-and-set on the seq, append the checkpoints, mirror status."""
    head = conn.execute(Q["run_head"], {"id": run_id}).fetchone()
    if head is None:
        raise errors.NotFound(f"no run {run_id!r}", run_id=run_id)
    holder, status, latest = head
    if owner is not None and holder != owner:
        raise errors.LeaseLost(
            f"run {run_id!r} is leased to {holder!r}, not {owner!r}", run_id=run_id, holder=holder
        )
    for cp in cps:
        if cp["seq"] != latest + 1:
            raise errors.Conflict(
                f"run {run_id!r} is at seq {latest}; cannot append seq {cp['seq']}",
                run_id=run_id,
                latest_seq=latest,
            )
        conn.execute(Q["insert_checkpoint"], cp)
        latest = cp["seq"]
    if cps and cps[-1]["status"] != status:
        params = {"id": run_id, "status": cps[-1]["status"], "updated_at": cps[-1]["created_at"]}
        conn.execute(Q["set_run_status"], params)


def _finish_effect(conn: sqlite3.Connection, params: dict[str, Any]) -> None:
    finished = conn.execute(Q["finish_effect"], params).fetchone()
    if finished is None:
        raise errors.Conflict(
            f"effect {params['call_id']!r} of run {params['run_id']!r} is not in flight",
            run_id=params["run_id"],
            call_id=params["call_id"],
        )
    if finished[0] is not None and params["status"] == "completed":
        conn.execute(Q["mark_compensated"], params | {"compensates": finished[0]})


def _claim_key(
    conn: sqlite3.Connection, lineage_id: str, key: str, reversibility: Reversibility
) -> tuple[Effect | None, str]:
    """The completed effect that makes this one a repeat, or the key to start it under.

    Reads never repeat-match. A completed effect that was compensated since does not count:
    the new one takes the key's next generation, so the outside system sees a new request.
    """
    if reversibility == Reversibility.READ:
        return None, key
    candidate, generation = key, 1
    while True:
        params = {"lineage_id": lineage_id, "idempotency_key": candidate}
        row = conn.execute(Q["completed_effect_by_key"], params).fetchone()
        if row is None:
            return None, candidate
        if row["compensated_by"] is None:
            return rows.effect_from_row(row), candidate
        generation += 1
        candidate = f"{key}#{generation}"


def _unsettled(conn: sqlite3.Connection, effect: Effect, key: str) -> Effect | None:
    """The same effect running or in doubt in the lineage: doing it again might do it twice."""
    if effect.reversibility == Reversibility.READ:
        return None
    params = {"lineage_id": effect.lineage_id, "idempotency_key": key}
    row = conn.execute(Q["unsettled_effect_by_key"], params).fetchone()
    if row is None or (row["run_id"], row["call_id"]) == (effect.run_id, effect.call_id):
        return None  # the same call started twice is refused by its key in the table
    return rows.effect_from_row(row)


def _declined_by_key(conn: sqlite3.Connection, approval: Approval) -> Approval | None:
    if approval.lineage_id is None or approval.idempotency_key is None:
        return None
    params = {"lineage_id": approval.lineage_id, "idempotency_key": approval.idempotency_key}
    row = conn.execute(Q["declined_approval_by_key"], params).fetchone()
    return rows.approval_from_row(row) if row else None
