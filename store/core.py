"""One job, long because every safety-critical write is here: the commit path.

The safety-critical write logic, once for every backend, as sans-IO transaction bodies.

A body is a generator: it yields `Stmt`s (a query's name, its parameters, what to fetch)
and receives each one's result; what it returns is the write's result, what it raises
aborts the transaction. A backend drives it inside one transaction of its own (the SQLite
writer thread, an asyncpg connection), running the named query in its dialect. So fencing,
the compare-and-set on a run's history, the effect ledger's claim by idempotency key,
decisions, votes and pages, and what each change announces (its outbox rows and audit
events, `store.announce`), are written here and nowhere else; the backends differ only in
connection handling, and the one query file (`store/sql/queries.sql`) in the SQL each
dialect needs.

Statements a dialect does not need (row locks SQLite's single writer makes moot) are empty
for it in the query file, and drivers skip empty statements.

The safety-critical write logic: each write is its own short body."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Any
from typing import TypeVar

from store import announce
from store import errors
from store import read_results
from store import rows
from store import shared
from store import spend
from store import undo_ends
from store.base import Batch
from store.base import Claim
from store.base import Claims
from store.base import Committed
from store.body import Body as Body
from store.body import Fetch as Fetch
from store.body import MakeBody as MakeBody
from store.body import Stmt as Stmt
from store.body import drive as drive
from store.digest import packed
from store.records import Approval
from store.records import ApprovalState
from store.records import AuditAnchor
from store.records import AuditEvent
from store.records import Checkpoint
from store.records import Effect
from store.records import EffectOutcome
from store.records import Page
from store.records import Reversibility

T = TypeVar("T")


# simple bodies


def one(name: str, params: Any, fetch: Fetch = "none") -> Body[Any]:
    """A body of one statement (which may commit alone: there is nothing else)."""
    return (yield Stmt(name, params, fetch, alone=fetch != "many"))


def changed_one(name: str, params: dict[str, Any]) -> Body[bool]:
    return bool((yield Stmt(name, params, "count", alone=True)) == 1)


def update_one(name: str, params: dict[str, Any], what: str) -> Body[None]:
    """Update the row `params['id']` names: NotFound, writing nothing, if there is none."""
    if (yield Stmt(name, params, "count", alone=True)) != 1:
        raise errors.NotFound(f"no {what} {params['id']!r}", id=params["id"])


def create_run(
    run_params: dict[str, Any], cp_params: dict[str, Any], events: list[dict[str, Any]]
) -> Body[None]:
    """The run, its first checkpoint and its events; a running run waits in the queue, so
    the idle workers are woken. Where the dialect has it, `create_run` does all of it in one
    statement (and answers a row); else the statements one by one."""
    prefixed = {f"cp_{name}": value for name, value in cp_params.items()}
    params = run_params | prefixed | _columns("ev_", events)
    if (yield Stmt("create_run", params, "one", alone=True)) is not None:
        return
    yield Stmt("insert_run", run_params)
    yield Stmt("insert_checkpoint", cp_params)
    if events:
        yield Stmt("insert_event", events, "many")
    if run_params["status"] == "running":  # it waits in the queue: wake the idle workers
        yield Stmt("notify_run_ready", {})


def claim_runs(params: dict[str, Any]) -> Body[Claims]:
    """The run queue's claim: the ready runs this worker took the leases of, with their
    epochs (its first write for each carries it, as after `acquire_lease`). A ready run with
    nothing to drive leaves the queue unclaimed. `SchemaTooNew`, claiming nothing, once the
    database's schema is newer than the worker's (`known_schema`)."""
    yield from refuse_newer_schema(params)
    lapsed = dict((yield Stmt("lapsed_ready_runs", params, "all")) or ())
    found = yield Stmt("claim_runs", params, "all", alone=True)
    check_answered_schema(found, params)
    taken = [row for row in found if row[0] is not None]  # PostgreSQL's schema-only row: none
    return Claims(
        (
            Claim(row[0], int(row[1]), row[2] or lapsed.get(row[0]))
            for row in taken
            if row[1] is not None
        ),
        more=len(taken) >= params["limit"],
    )


def claim_outbox(params: dict[str, Any]) -> Body[list[Any]]:
    """The outbox rows claimed for a sender: `SchemaTooNew`, claiming nothing, once the
    database's schema is newer than the sender's (`known_schema`)."""
    yield from refuse_newer_schema(params)
    found = yield Stmt("claim_outbox", params, "all", alone=True)
    check_answered_schema(found, params)
    return [row for row in found if row["id"] is not None]


def refuse_newer_schema(params: dict[str, Any]) -> Body[None]:
    """Where the dialect reads the schema's version before a claim (SQLite): refuse a newer
    one. (PostgreSQL's claim answers it: `check_answered_schema`.)"""
    found = yield Stmt("claim_schema", params, "one")
    if found is not None:
        _refuse_newer(int(found[0]), params["known_schema"])


def check_answered_schema(found: Sequence[Any], params: dict[str, Any]) -> None:
    """Where a claim answered the schema's version with its rows (PostgreSQL): refuse a
    newer one. The claim took nothing then: its guard compares the same version."""
    answered = dict(found[0]).get("schema_version") if found else None
    if answered is not None:
        _refuse_newer(int(answered), params["known_schema"])


def _refuse_newer(found: int, known: int) -> None:
    if found > known:
        raise errors.SchemaTooNew(
            f"the database has schema version {found}, newer than this Signoff understands "
            f"({known}): this worker steps aside",
            found=found,
            supported=known,
        )


def prune(before: float | None, *, include_audit: bool) -> Body[tuple[int, int]]:
    yield Stmt("prune_outbox", {"before": before})
    runs = yield Stmt("prune_runs", {"before": before}, "count")
    if not include_audit:
        return runs, 0
    yield from anchor_cuts(before)
    events = yield Stmt("prune_audit", {"before": before}, "count")
    return runs, events


def anchor_cuts(before: float | None) -> Body[None]:
    """Before audit events go: an anchor at the last event of each stretch removed, which
    the event after it links to, so what is kept still verifies (`store.chain`)."""
    found = list((yield Stmt("prunable_audit", {"before": before}, "all")) or ())
    if not found:
        return
    for (seq, hashed, gone), after in zip(found, [*found[1:], None], strict=True):
        if gone and (after is None or not after[2]):
            params = {"seq": seq, "kind": "cut", "hash": hashed, "at": None}
            yield Stmt("insert_anchor", params)


def add_anchor(kind: str, at: float | None) -> Body[AuditAnchor | None]:
    """Anchor the audit chain's head (see `Store.add_anchor`)."""
    head = yield Stmt("audit_head", {}, "one")
    if head is None:
        return None
    yield Stmt("insert_anchor", {"seq": head[0], "kind": kind, "hash": head[1], "at": at})
    row = yield Stmt("get_anchor", {"seq": head[0], "kind": kind}, "one")
    return rows.anchor_from_row(row)


def remind_open_pages(params: dict[str, Any]) -> Body[int]:
    yield Stmt("lock_page_reminders", {})  # two processes at once remind once
    return (yield Stmt("remind_open_pages", params, "count"))  # type: ignore[no-any-return]


# approvals and pages


def cast_vote(params: dict[str, Any], event: dict[str, Any] | None) -> Body[tuple[Approval, int]]:
    """A person's decision, in one transaction: on an approval that needs a quorum an
    approval is a vote (one per person, audited) that decides once the quorum is reached;
    a decline, or an approval that needs one approver, decides at once. Returns the
    approval and the votes counted toward its quorum (0 when it needs none)."""
    approval_id = params["id"]
    row = yield Stmt("approval_for_update", {"id": approval_id}, "one")  # votes take turns
    if row is None:
        raise errors.NotFound(f"no approval {approval_id!r}", approval_id=approval_id)
    approval = rows.approval_from_row(row)
    if params.get("link_nonce"):  # first: a link used already says so, whatever came after
        yield from _spend_link(params)
    if approval.state != ApprovalState.PENDING:
        raise already_decided(approval)
    needed = approval.required_approvals
    if params["state"] != ApprovalState.APPROVED.value or needed <= 1:
        return (yield from decide_approval(params, event, timeout=False)), 0
    voter = params.get("decided_for") or params["decided_by"]  # a delegate votes for them
    votes = yield from _add_vote(approval, voter, params["decided_at"], params["decided_by"])
    if votes < needed:
        return approval, votes
    return (yield from decide_approval(params, event, timeout=False)), votes


def _spend_link(params: dict[str, Any]) -> Body[None]:
    """Record the e-mailed link this decision comes through as used, in the decision's own
    transaction: a decision refused later in it leaves the link unused, and a link used
    already refuses the decision (`LinkUsed`)."""
    use = {
        "nonce": params["link_nonce"],
        "approval_id": params["id"],
        "person": params["decided_by"],
        "decision": params["state"],
        "used_at": params["decided_at"],
    }
    if not (yield Stmt("use_email_link", use, "count")):
        raise errors.LinkUsed(
            f"the link {use['nonce']!r} was used already", approval_id=params["id"]
        )


def _add_vote(approval: Approval, voter: str, at: Any, by: str) -> Body[int]:
    """Record one person's vote (`by` casts it, for `voter` when delegated) with its audit
    event; `AlreadyVoted` (with the count) if they voted already: the key (approval, voter)
    is the judge."""
    vote = {"approval_id": approval.id, "user_id": voter, "at": at}
    inserted = yield Stmt("insert_vote", vote, "count")
    votes: int = (yield Stmt("count_votes", vote, "one"))[0]
    if not inserted:
        raise errors.AlreadyVoted(
            f"{voter} already voted on approval {approval.id!r}",
            approval_id=approval.id,
            user_id=voter,
            votes=votes,
        )
    yield announce.outbox("approval_voted", approval.id)
    detail: dict[str, Any] = {"votes": votes, "required": approval.required_approvals}
    if voter != by:
        detail["for"] = voter
    yield Stmt(
        "insert_event",
        {
            "at": at,
            "actor": by,
            "action": "vote",
            "run_id": approval.run_id,
            "approval_id": approval.id,
            "detail": rows.dumps(detail),
        },
    )
    return votes


def decide_approval(
    params: dict[str, Any], event: dict[str, Any] | None, *, timeout: bool
) -> Body[Approval]:
    """Compare-and-set: one decision wins; every other gets why it lost."""
    approval_id = params["id"]
    changed, row = yield from _set_and_get(Stmt("decide_approval", params, "count"), "approval")
    approval = rows.approval_from_row(row)
    if not changed:
        if approval.state != ApprovalState.PENDING:
            raise already_decided(approval)
        if timeout:
            raise errors.Conflict(
                f"approval {approval_id!r} is not due yet", approval_id=approval_id
            )
        raise errors.Expired(
            f"approval {approval_id!r} passed its deadline", approval_id=approval_id
        )
    amounts, test_now = params.get("spend_amounts"), params.get("test_now")
    yield from spend.decided(approval, amounts, params.get("spend_now"), test_now)
    yield announce.outbox("approval_decided", approval_id)
    if approval.run_id is not None:  # the last decision a parked run waited for: it is ready
        yield Stmt("ready_decided_run", {"run_id": approval.run_id})
    if event:
        yield Stmt("insert_event", event)
    return approval


def acknowledge_page(params: dict[str, Any]) -> Body[Page]:
    page_id = params["id"]
    changed, row = yield from _set_and_get(Stmt("acknowledge_page", params, "count"), "page")
    page = rows.page_from_row(row)
    if not changed:
        raise errors.Conflict(
            f"page {page_id!r} was already acknowledged by {page.acknowledged_by}", page=page
        )
    yield announce.outbox("page_acknowledged", page_id)
    return page


def _set_and_get(compare_and_set: Stmt, what: str) -> Body[tuple[int, Any]]:
    """A compare-and-set (fetching its count) on the `what` (`approval`, `page`) its
    parameters' `id` names, then that row as it is now (`get_<what>`), whether or not the set
    won: how many rows it changed, and the row. NotFound if there is no such row."""
    ident = compare_and_set.params["id"]
    changed = yield compare_and_set
    row = yield Stmt(f"get_{what}", {"id": ident}, "one")
    if row is None:
        raise errors.NotFound(f"no {what} {ident!r}", **{f"{what}_id": ident})
    return changed, row


def create_approval(approval: Approval, params: dict[str, Any]) -> Body[None]:
    yield Stmt("insert_approval", params)
    yield from announce.approval_created(approval, params)


def fill_authority(params: dict[str, Any], event: dict[str, Any]) -> Body[bool]:
    """Record an approval's authority where it has none, audited; False (nothing written)
    when another process filled it first."""
    if (yield Stmt("fill_authority", params, "count")) != 1:
        return False
    yield Stmt("insert_event", event)
    return True


def record_reminder(params: dict[str, Any]) -> Body[bool]:
    """Compare-and-set on the reminder count; the reminder it records is announced once."""
    before = yield Stmt("approval_for_update", {"id": params["id"]}, "one")
    if before is None or not (yield Stmt("record_reminder", params, "count")):
        return False
    reminders, escalated = params["reminders_sent"], bool(params["escalated"])
    yield from announce.reminded(before, reminders_sent=reminders, escalated=escalated)
    return True


def extend_deadline(params: dict[str, Any]) -> Body[bool]:
    """Compare-and-set on the deadline, which escalates the approval (announced once)."""
    before = yield Stmt("approval_for_update", {"id": params["id"]}, "one")
    if before is None or not (yield Stmt("extend_deadline", params, "count")):
        return False
    reminders = before["reminders_sent"]
    yield from announce.reminded(before, reminders_sent=reminders, escalated=True)
    return True


def record_waiter(params: dict[str, Any]) -> Body[bool | None]:
    """A waiter's heartbeat on a pending approval no run asked for (None: nothing written);
    True when nobody's wait was live before it (a card that said nobody waits is redrawn)."""
    before = yield Stmt("approval_for_update", {"id": params["id"]}, "one")
    if before is None or not (yield Stmt("record_waiter", params, "count")):
        return None
    if before["waiter_left_at"] is not None:
        yield announce.outbox("approval_waiting", params["id"])
    return before["waiter_until"] is None


def waiter_left(params: dict[str, Any]) -> Body[bool]:
    """Compare-and-set: nobody waits for this pending approval now (announced once)."""
    if not (yield Stmt("waiter_left", params, "count")):
        return False
    yield announce.outbox("approval_waiting", params["id"])
    return True


def already_decided(approval: Approval) -> errors.AlreadyDecided:
    return errors.AlreadyDecided(
        f"approval {approval.id!r} was already {approval.state.value} by {approval.decided_by}",
        approval=approval,
    )


def insert_event(event: AuditEvent) -> Body[None]:
    yield Stmt("insert_event", rows.event_params(event))


def changed_with_event(stmt: Stmt, event: AuditEvent) -> Body[bool]:
    """One compare-and-set (`stmt`, fetching its count) and, when it changed its row, its
    audit event."""
    changed = (yield stmt) == 1
    if changed:
        yield from insert_event(event)
    return bool(changed)


# the commit of a batch


def commit(
    batch: Batch, *, test_now: float | None = None, spend_now: float | None = None
) -> MakeBody[Committed]:
    """Check a batch and prepare its parameters now; the body runs inside the transaction.
    `test_now` is the store's own clock, when it has one (`rows.judge_now`); `spend_now`
    the time limits' windows are judged by, when the store knows it without asking."""
    check_batch(batch)
    run_id = batch.run_id
    cps = [rows.checkpoint_params(cp) for cp in batch.checkpoints]
    finish = read_results.outcome_params(batch)
    start = [(e, rows.effect_params(e)) for e in batch.start]
    request = [(a, rows.approval_params(a, test_now)) for a in batch.request]
    pages = [rows.page_params(p) for p in batch.pages]
    settle = [
        {"run_id": run_id, "call_id": s.call_id, "by": s.by, "at": rows.ts(s.at)}
        for s in batch.settle_pages
    ]
    events = [rows.event_params(e) for e in batch.events]
    lineages, keys = ledger_locks(batch)
    spend_locks = [lock for plan in batch.admit.values() for lock in plan.locks()]

    def body() -> Body[Committed]:
        if batch.owner is not None or cps:
            yield from check_head(run_id, batch.owner, cps, epoch=batch.epoch)
        for lineage_id in lineages:  # the ledger's claims by key are serialized per lineage
            yield Stmt("lock_lineage", {"lineage_id": lineage_id})
        for key in keys:  # and per key across lineages, which the arguments bind (after them)
            yield Stmt("lock_key", {"idempotency_key": key})
        # each limit's key a new approval counts on
        locked = (yield from spend.lock(spend_locks)) if spend_locks else None
        for params in finish:
            yield from finish_effect(params)
        yield from undo_ends.ends(batch, test_now)
        for change in batch.spend:
            yield from spend.change(run_id, change, test_now)
        committed = Committed()
        for effect, params in start:
            yield from start_effect(committed, effect, params)
        for approval, params in request:
            plan = batch.admit.get(approval.id)
            when = spend_now if spend_now is not None else locked
            yield from request_approval(committed, approval, params, plan, when)
        if pages or settle:
            yield from open_and_settle_pages(committed, pages, settle)
        if events:
            yield Stmt("insert_event", events, "many")
        return committed

    return body


def step_statement(batch: Batch) -> Stmt | None:
    """A step's plain write as the one statement `commit_step`, where the dialect has it (a
    round trip saved per statement): checkpoints (and a finished run's announcement), the
    outcomes of effects, the starts of reads (which claim no key) and audit events. None for
    any other batch, which only `commit`'s body writes.

    The statement checks what `check_head` and `finish_effect` check and writes only if every
    check holds; when one fails it writes nothing and the store runs `commit`'s body, which
    says why. So it never commits a batch the body would refuse."""
    if any(e.reversibility != Reversibility.READ for e in batch.start):
        return None
    params = _step_params(batch)
    return None if params is None else Stmt("commit_step", params, "one")


def start_statement(batch: Batch) -> Stmt | None:
    """A step that starts mutating effects as one call of `start_step`, where the dialect
    has it: the same batches as `step_statement` but for those starts (and for a run's end,
    which such a step never is). It does what `commit`'s body does, in the same order, and
    where the body would refuse or needs what only Python computes it writes nothing, and
    the store runs the body."""
    if all(e.reversibility == Reversibility.READ for e in batch.start):
        return None
    if batch.checkpoints and batch.checkpoints[-1].status.value in announce.FINISHED:
        return None
    params = _step_params(batch)
    if params is None:
        return None
    lineages, keys = ledger_locks(batch)
    return Stmt("start_step", params | {"lineages": lineages, "keys": keys}, "one")


def _step_params(batch: Batch) -> dict[str, Any] | None:
    """A step's batch as the columns one statement unnests; None for a batch only the body
    writes (approvals, pages, no checkpoint, or seqs the body refuses)."""
    cps = batch.checkpoints
    if batch.request or batch.pages or batch.settle_pages or batch.spend or not cps:
        return None
    if batch.ended_calls or batch.undo_ended:
        return None
    if any(b.seq != a.seq + 1 for a, b in pairwise(cps)):
        return None  # the body refuses it (Conflict)
    check_batch(batch)
    params: dict[str, Any] = {
        "run_id": batch.run_id,
        "owner": batch.owner,
        "epoch": batch.epoch,
        "first_seq": cps[0].seq,
        "status": cps[-1].status.value,
        "updated_at": rows.ts(cps[-1].created_at),
    }
    params |= _columns("cp_", [rows.checkpoint_params(cp) for cp in cps])
    params |= _columns("fin_", read_results.outcome_params(batch))
    params |= _columns("st_", [rows.effect_params(e) for e in batch.start])
    params |= _columns("ev_", [rows.event_params(e) for e in batch.events])
    return params


def ledger_locks(batch: Batch) -> tuple[list[str], list[str]]:
    """The lineages and the keys a batch's claims lock, in the order every writer takes them
    (lineages, then keys; each sorted), so two writers never wait on each other in a circle."""
    if not batch.request and all(e.reversibility == Reversibility.READ for e in batch.start):
        return [], []  # a read step's batch, most batches: it claims no key
    lineages = sorted(
        {e.lineage_id for e in batch.start if e.reversibility != Reversibility.READ}
        | {a.lineage_id for a in batch.request if a.lineage_id and a.idempotency_key}
    )
    keys = sorted({e.idempotency_key for e in batch.start if e.reversibility != Reversibility.READ})
    return lineages, keys


_STEP_COLUMNS = {  # as `commit_step` unnests them
    "cp_": (
        "seq", "step", "snapshot", "status", "steps", "input_tokens", "output_tokens", "cost",
        "stop_reason", "error", "created_at", "messages", "cached_input_tokens",
    ),
    "fin_": ("call_id", "status", "result", "error", "finished_at", "result_seq"),
    "st_": (
        "call_id", "lineage_id", "step", "tool", "reversibility", "compensator",
        "idempotency_key", "idempotent", "approval_id", "compensates", "started_at", "args",
        "sensitive", "args_digest", "asked_digest",
    ),
    "ev_": ("at", "actor", "action", "run_id", "approval_id", "detail"),
}  # fmt: skip


def _columns(prefix: str, records: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Records as one list per column (the statement unnests them back into rows)."""
    return {f"{prefix}{name}": [r[name] for r in records] for name in _STEP_COLUMNS[prefix]}


def open_and_settle_pages(
    committed: Committed, pages: list[dict[str, Any]], settle: list[dict[str, Any]]
) -> Body[None]:
    """Open the new pages and settle a call's open ones, each announced once."""
    for params in pages:
        if (yield Stmt("insert_page", params, "count")):
            committed.new_pages.append(params["id"])
            yield from announce.page_opened(params)
    for params in settle:
        for settled in (yield Stmt("settle_pages_of_call", params, "all")):
            yield announce.outbox("page_acknowledged", settled[0])


def check_batch(batch: Batch) -> None:
    """Every record in a batch belongs to its run: the lease is checked for that run only."""
    records: tuple[Checkpoint | EffectOutcome | Effect | Approval | Page | AuditEvent, ...] = (
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


def check_head(
    run_id: str, owner: str | None, cps: Sequence[dict[str, Any]], *, epoch: int | None = None
) -> Body[None]:
    """Fence on the lease (its holder and epoch), compare-and-set on the seq, append the
    checkpoints, mirror status.

    `run_head` locks the run's row where the dialect has row locks, so two writers of one run
    take turns and the second sees the first's seq."""
    head = yield Stmt("run_head", {"id": run_id}, "one")
    if head is None:
        raise errors.NotFound(f"no run {run_id!r}", run_id=run_id)
    holder, status, latest, held_epoch = head
    if owner is not None and holder != owner:
        raise errors.LeaseLost(
            f"run {run_id!r} is leased to {holder!r}, not {owner!r}", run_id=run_id, holder=holder
        )
    if owner is not None and epoch is not None and held_epoch != epoch:
        raise errors.LeaseLost(
            f"run {run_id!r} is in lease epoch {held_epoch}, not {epoch}",
            run_id=run_id,
            holder=holder,
            epoch=held_epoch,
        )
    for cp in cps:
        if cp["seq"] != latest + 1:
            raise errors.Conflict(
                f"run {run_id!r} is at seq {latest}; cannot append seq {cp['seq']}",
                run_id=run_id,
                latest_seq=latest,
            )
        yield Stmt("insert_checkpoint", cp)
        latest = cp["seq"]
    if cps and cps[-1]["status"] != status:
        params = {"id": run_id, "status": cps[-1]["status"], "updated_at": cps[-1]["created_at"]}
        yield Stmt("set_run_status", params)
        yield from announce.run_status_changed(run_id, params["status"])
    elif cps and cps[-1]["stop_reason"] == announce.UNDONE:  # a call of an ended run undone
        yield from announce.run_status_changed(run_id, status)


def finish_effect(params: dict[str, Any]) -> Body[None]:
    finished = yield Stmt("finish_effect", params, "one")
    if finished is None:
        raise errors.Conflict(
            f"effect {params['call_id']!r} of run {params['run_id']!r} is not in flight",
            run_id=params["run_id"],
            call_id=params["call_id"],
        )
    if finished[0] is not None and params["status"] == "completed":
        yield Stmt("mark_compensated", params | {"compensates": finished[0]})


def start_effect(committed: Committed, effect: Effect, params: dict[str, Any]) -> Body[None]:
    if effect.reversibility == Reversibility.READ:  # most starts: a read claims no key, so
        yield Stmt("insert_effect", params)  # there is nothing under it to find or share
        return
    prior, key = yield from claim_key(
        effect.lineage_id, effect.idempotency_key, effect.reversibility
    )
    if prior is not None:
        if prior.digest == effect.digest:
            committed.preempted[effect.call_id] = prior
            yield from shared.reused(effect.run_id, effect.call_id, prior, effect.started_at)
        else:  # the key is bound to other arguments: never hand out that call's result
            committed.conflicts[effect.call_id] = prior
        return
    other = yield from conflicting_effect(effect, key)
    if other is not None:
        committed.conflicts[effect.call_id] = other
        return
    unsettled = None if effect.idempotent else (yield from unsettled_effect(effect, key))
    if unsettled is not None:
        committed.blocked[effect.call_id] = unsettled
        return
    if key != effect.idempotency_key:
        committed.keys[effect.call_id] = key
    yield Stmt("insert_effect", params | {"idempotency_key": key})
    relied_on = yield from shared.shared_effect(effect, key)
    if relied_on is not None:
        yield from shared.reused(effect.run_id, effect.call_id, relied_on, effect.started_at)


def request_approval(
    committed: Committed,
    approval: Approval,
    params: dict[str, Any],
    plan: spend.SpendPlan | None = None,
    spend_now: float | None = None,
) -> Body[None]:
    """Create an approval unless its call (its key and arguments) already happened or was
    declined in the lineage. The same key with other arguments is asked: a person decides.
    With a spend `plan`, the plan decides under the limits' locks which approval is made."""
    call = approval.call_id or approval.id
    if approval.lineage_id is not None and approval.idempotency_key is not None:
        done, _ = yield from claim_key(
            approval.lineage_id, approval.idempotency_key, Reversibility.IRREVERSIBLE
        )
        if done is not None and done.repeated_by(approval.shown_digest):
            committed.preempted[call] = done
            if approval.run_id is not None:
                yield from shared.reused(approval.run_id, call, done, approval.created_at)
            return
        key = {
            "lineage_id": approval.lineage_id,
            "idempotency_key": approval.idempotency_key,
            "args_digest": approval.shown_digest,
        }
        declined = yield Stmt("declined_approval_by_key", key, "one")
        if declined is not None:
            committed.prior_decisions[call] = rows.approval_from_row(declined)
            return
    if plan is not None:
        approval = (yield from spend.admit(plan, spend_now)).approval
        params = rows.approval_params(approval, params["test_now"])
        committed.admitted[call] = approval
    yield Stmt("insert_approval", params)
    yield from announce.approval_created(approval, params)


def claim_key(
    lineage_id: str, key: str, reversibility: Reversibility
) -> Body[tuple[Effect | None, str]]:
    """The completed effect that makes this one a repeat, or the key to start it under.

    Reads never repeat-match. A completed effect that was compensated since does not count:
    the new one takes the key's next generation, so the outside system sees a new request.
    """
    if reversibility == Reversibility.READ:
        return None, key
    candidate, generation = key, 1
    while True:
        params = {"lineage_id": lineage_id, "idempotency_key": candidate}
        row = yield Stmt("completed_effect_by_key", params, "one")
        if row is None:
            return None, candidate
        if row["compensated_by"] is None:
            return rows.effect_from_row(row), candidate
        generation += 1
        candidate = f"{key}#{generation}"


def conflicting_effect(effect: Effect, key: str) -> Body[Effect | None]:
    """An effect under this key in any lineage with other arguments that may have happened:
    starting this one would either repeat that effect's receipt or do a second one unasked."""
    if effect.reversibility == Reversibility.READ:
        return None
    params = {"idempotency_key": key, "args_digest": packed(effect.digest)}
    row = yield Stmt("conflicting_effect_by_key", params, "one")
    if row is None or (row["run_id"], row["call_id"]) == (effect.run_id, effect.call_id):
        return None
    return rows.effect_from_row(row)


def unsettled_effect(effect: Effect, key: str) -> Body[Effect | None]:
    """The same effect running or in doubt in the lineage: doing it again might do it twice."""
    if effect.reversibility == Reversibility.READ:
        return None
    params = {"lineage_id": effect.lineage_id, "idempotency_key": key}
    row = yield Stmt("unsettled_effect_by_key", params, "one")
    if row is None or (row["run_id"], row["call_id"]) == (effect.run_id, effect.call_id):
        return None  # the same call started twice is refused by its key in the table
    return rows.effect_from_row(row)
