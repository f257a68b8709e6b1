"""The SQLite backend: the embedded default.

One writer thread with group commit (`store.writer`), WAL, `synchronous=FULL` by default,
`BEGIN IMMEDIATE` and a busy timeout; reads go through an aiosqlite connection and never
hold a lock while rows are handed back. An in-memory database has one connection, so its
reads go through the writer.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Literal, TypeVar

import aiosqlite

from store import errors, migration, queries, rows, sqlite_batch, sqlite_health, sqlite_schema
from store.base import (
    DEFAULT_PROTECTED_FACTS,
    Batch,
    Committed,
    OperationalCounts,
    check_new_run,
    refuse_protected,
)
from store.records import (
    Approval,
    ApprovalState,
    AuditEvent,
    Budget,
    Checkpoint,
    Delivery,
    Effect,
    Fact,
    OutboxItem,
    Page,
    Run,
    RunState,
    RunStatus,
)
from store.writer import WAL_LIMIT, GroupCommitWriter

T = TypeVar("T")
Synchronous = Literal["OFF", "NORMAL", "FULL", "EXTRA"]
Q = queries.load("sqlite")
DIALECT = "sqlite"


@contextmanager
def translate_errors() -> Iterator[None]:
    """Map sqlite3 errors to store errors, once, for every call."""
    try:
        yield
    except sqlite3.IntegrityError as exc:
        text = str(exc)
        if "FOREIGN KEY" in text:
            raise errors.NotFound("the record this write refers to does not exist") from exc
        if "UNIQUE" in text or "PRIMARY KEY" in text:
            raise errors.AlreadyExists(f"already exists ({text})") from exc
        raise errors.Conflict(text) from exc
    except sqlite3.Error as exc:
        if _disk_full(exc):
            raise errors.DiskFull(
                "the database's disk is full: nothing was written; free space and retry"
            ) from exc
        raise errors.DatabaseError(f"sqlite: {exc}") from exc


def _disk_full(exc: sqlite3.Error) -> bool:
    return getattr(exc, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_FULL


class SqliteStore:
    def __init__(
        self,
        path: str,
        *,
        synchronous: Synchronous = "FULL",
        busy_timeout_ms: int = 10_000,
        protected_facts: frozenset[str] = DEFAULT_PROTECTED_FACTS,
    ) -> None:
        if synchronous not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"synchronous must be OFF, NORMAL, FULL or EXTRA, not {synchronous!r}")
        self.path = path
        self.url = "sqlite://:memory:" if path == ":memory:" else f"sqlite:///{path}"
        self.protected_facts = protected_facts
        self._synchronous = synchronous
        self._busy_timeout_ms = busy_timeout_ms
        wal = None if path == ":memory:" else f"{path}-wal"
        self._writer = GroupCommitWriter(
            self._connect, busy_timeout_ms=busy_timeout_ms, wal_path=wal
        )
        self._reader: aiosqlite.Connection | None = None
        self._refused_for_space = False  # the last write failed for want of space

    async def open(self, *, migrate: bool = True) -> SqliteStore:
        try:
            return await self._open(migrate=migrate)
        except BaseException as exc:
            await self.close()
            if isinstance(exc, errors.DatabaseError):
                raise errors.DatabaseError(f"{self.path}: {exc}") from exc
            raise

    async def _open(self, *, migrate: bool) -> SqliteStore:
        with translate_errors():
            await self._writer.start()
            version = await self._writer.run_alone(sqlite_schema.schema_version)
            if version > migration.latest_version(DIALECT):
                raise errors.SchemaTooNew(
                    f"{self.path} has schema version {version}, newer than this Signoff "
                    f"understands ({migration.latest_version(DIALECT)}); upgrade Signoff",
                    found=version,
                    supported=migration.latest_version(DIALECT),
                )
            if version == 0 and await self._writer.run_alone(sqlite_schema.other_tables):
                raise errors.ForeignDatabase(
                    f"{self.path} holds another application's tables and no Signoff schema; "
                    "point SIGNOFF_DATABASE_URL at a new or Signoff file"
                )
            if self.path != ":memory:":  # only now: a newer database is left untouched
                await self._writer.run_alone(sqlite_schema.use_wal)
            if migrate:
                await self.migrate()
            if self.path != ":memory:":
                self._reader = await _daemon(aiosqlite.connect(self.path))
                self._reader.row_factory = sqlite3.Row
                await self._reader.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")
                await self._reader.execute("PRAGMA query_only = ON")
        return self

    async def migrate(self) -> tuple[int, int]:
        """Apply pending migrations; return (version before, version after)."""
        with translate_errors():
            return await self._writer.run_alone(sqlite_schema.apply_migrations)

    async def schema_version(self) -> int:
        with translate_errors():
            return await self._writer.run_alone(sqlite_schema.schema_version)

    async def close(self) -> None:
        if self._reader is not None:
            await self._reader.close()
            self._reader = None
        await self._writer.close()

    def _connect(self) -> sqlite3.Connection:
        # Used by the writer thread and, for lone commits, the event loop; never at once.
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")
        conn.execute(f"PRAGMA synchronous = {self._synchronous}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute(f"PRAGMA journal_size_limit = {WAL_LIMIT}")  # a checkpointed WAL shrinks
        return conn

    async def _write(self, job: Callable[[sqlite3.Connection], T]) -> T:
        try:
            with translate_errors():
                done = await self._writer.run(job)
        except errors.DiskFull:
            self._refused_for_space = True
            raise
        self._refused_for_space = False
        return done

    async def health(self) -> dict[str, str]:
        if self.path == ":memory:":
            return {}
        return await asyncio.to_thread(
            sqlite_health.problems, self.path, refused_for_space=self._refused_for_space
        )

    async def _read(self, name: str, params: dict[str, Any]) -> list[sqlite3.Row]:
        sql = Q[name]
        with translate_errors():
            if self._reader is None:
                return await self._writer.run(lambda conn: conn.execute(sql, params).fetchall())
            return list(await self._reader.execute_fetchall(sql, params))

    async def _read_one(self, name: str, params: dict[str, Any], what: str) -> sqlite3.Row:
        found = await self._read(name, params)
        if not found:
            raise errors.NotFound(f"no {what}", **params)
        return found[0]

    # runs

    async def create_run(
        self, run: Run, snapshot: Checkpoint, *, events: Sequence[AuditEvent] = ()
    ) -> None:
        check_new_run(run, snapshot, events)
        run_params, cp_params = rows.run_params(run), rows.checkpoint_params(snapshot)
        event_params = [rows.event_params(event) for event in events]

        def job(conn: sqlite3.Connection) -> None:
            conn.execute(Q["insert_run"], run_params)
            conn.execute(Q["insert_checkpoint"], cp_params)
            conn.executemany(Q["insert_event"], event_params)

        try:
            await self._write(job)
        except errors.AlreadyExists as exc:
            raise errors.AlreadyExists(f"run {run.id!r} already exists", run_id=run.id) from exc

    async def get_run(self, run_id: str) -> Run:
        row = await self._read_one("get_run", {"id": run_id}, f"run {run_id!r}")
        return rows.run_from_row(row)

    async def list_runs(self, status: RunStatus | None = None, *, limit: int = 100) -> list[Run]:
        if status is None:
            found = await self._read("list_runs", {"limit": limit})
        else:
            found = await self._read("list_runs_by_status", {"status": status, "limit": limit})
        return [rows.run_from_row(row) for row in found]

    async def set_run_budget(self, run_id: str, budget: Budget, *, at: datetime) -> None:
        params = {
            "id": run_id,
            "budget": budget.model_dump_json(exclude_defaults=True),
            "updated_at": rows.ts(at),
        }
        await self._write(_update_one("set_run_budget", params, "run"))

    async def prune_runs(self, finished_before: datetime) -> int:
        return (await self.prune(finished_before, include_audit=False))[0]

    async def prune(self, finished_before: datetime, *, include_audit: bool) -> tuple[int, int]:
        before = rows.ts(finished_before)

        def job(conn: sqlite3.Connection) -> tuple[int, int]:
            conn.execute(Q["prune_outbox"], {"before": before})
            runs = conn.execute(Q["prune_runs"], {"before": before}).rowcount
            events = (
                conn.execute(Q["prune_audit"], {"before": before}).rowcount if include_audit else 0
            )
            return runs, events

        return await self._write(job)

    # history

    async def commit(self, batch: Batch) -> Committed:
        return await self._write(sqlite_batch.commit_job(batch))

    async def load_state(
        self, run_id: str, *, seq: int | None = None, step: int | None = None
    ) -> RunState:
        if step is not None:
            found = await self._read("seq_at_step", {"run_id": run_id, "step": step})
            seq = found[0][0] if found else None
            if seq is None:
                raise errors.NotFound(f"run {run_id!r} has no step {step}", run_id=run_id)
        found = await self._read("load_state", {"run_id": run_id, "seq": seq})
        if not found or found[-1][2] is None:
            at = "" if seq is None else f" at seq {seq}"
            raise errors.NotFound(f"no state for run {run_id!r}{at}", run_id=run_id)
        return rows.state_from_rows(run_id, found)

    async def history(self, run_id: str) -> list[Checkpoint]:
        found = await self._read("history", {"run_id": run_id})
        if not found:
            raise errors.NotFound(f"no run {run_id!r}", run_id=run_id)
        return [rows.checkpoint_from_row(row) for row in found]

    # effects

    async def get_effect(self, run_id: str, call_id: str) -> Effect:
        params = {"run_id": run_id, "call_id": call_id}
        return rows.effect_from_row(await self._read_one("get_effect", params, "effect"))

    async def list_effects(self, run_id: str) -> list[Effect]:
        found = await self._read("list_effects", {"run_id": run_id})
        return [rows.effect_from_row(row) for row in found]

    async def find_effect(self, lineage_id: str, idempotency_key: str) -> Effect | None:
        params = {"lineage_id": lineage_id, "idempotency_key": idempotency_key}
        found = await self._read("completed_effect_by_key", params)
        return rows.effect_from_row(found[0]) if found else None

    # approvals

    async def create_approval(self, approval: Approval) -> None:
        params = rows.approval_params(approval)
        await self._write(lambda conn: conn.execute(Q["insert_approval"], params))

    async def get_approval(self, approval_id: str) -> Approval:
        row = await self._read_one("get_approval", {"id": approval_id}, "approval")
        return rows.approval_from_row(row)

    async def duplicate_approval(
        self, idempotency_key: str, *, lineage_id: str | None, since: datetime
    ) -> Approval | None:
        params = {"idempotency_key": idempotency_key, "lineage_id": lineage_id}
        found = await self._read("duplicate_approval_by_key", params | {"since": rows.ts(since)})
        return rows.approval_from_row(found[0]) if found else None

    async def list_approvals(
        self,
        *,
        run_id: str | None = None,
        state: ApprovalState | None = None,
        limit: int = 1000,
    ) -> list[Approval]:
        params = {"run_id": run_id, "state": state, "limit": limit}
        if run_id is not None:
            found = await self._read("list_approvals_of_run", params)
        elif state is not None:
            found = await self._read("list_approvals_by_state", params)
        else:
            found = await self._read("list_approvals", params)
        return [rows.approval_from_row(row) for row in found]

    async def add_vote(self, approval_id: str, user_id: str, at: datetime) -> int:
        params = {"approval_id": approval_id, "user_id": user_id, "at": rows.ts(at)}

        def job(conn: sqlite3.Connection) -> int:
            state = conn.execute(Q["get_approval"], {"id": approval_id}).fetchone()
            if state is None:
                raise errors.NotFound(f"no approval {approval_id!r}", approval_id=approval_id)
            if state["state"] != ApprovalState.PENDING:
                raise _already_decided(rows.approval_from_row(state))
            conn.execute(Q["insert_vote"], params)
            return conn.execute(Q["count_votes"], params).fetchone()[0]

        return await self._write(job)

    async def list_votes(self, approval_id: str) -> list[str]:
        found = await self._read("list_votes", {"approval_id": approval_id})
        return [row[0] for row in found]

    async def decide_approval(
        self,
        approval_id: str,
        state: ApprovalState,
        *,
        by: str,
        at: datetime,
        reason: str | None = None,
        approved_args: dict[str, Any] | None = None,
        not_before: datetime | None = None,
        open_at: datetime | None = None,
        event: AuditEvent | None = None,
    ) -> Approval:
        if state == ApprovalState.PENDING:
            raise ValueError("a decision is approved or declined, never pending")
        params = {
            "id": approval_id,
            "state": ApprovalState(state).value,
            "decided_by": by,
            "decided_at": rows.ts(at),
            "reason": reason,
            "approved_args": rows.maybe_dumps(approved_args),
            "not_before": rows.ts(not_before),
            "open_at": rows.ts(open_at),
        }
        event_params = rows.event_params(event) if event else None

        def job(conn: sqlite3.Connection) -> Approval:
            changed = conn.execute(Q["decide_approval"], params).rowcount
            row = conn.execute(Q["get_approval"], {"id": approval_id}).fetchone()
            if row is None:
                raise errors.NotFound(f"no approval {approval_id!r}", approval_id=approval_id)
            approval = rows.approval_from_row(row)
            if not changed:
                if approval.state != ApprovalState.PENDING:
                    raise _already_decided(approval)
                if not_before is not None:
                    raise errors.Conflict(
                        f"approval {approval_id!r} is not due yet", approval_id=approval_id
                    )
                raise errors.Expired(
                    f"approval {approval_id!r} passed its deadline", approval_id=approval_id
                )
            if event_params:
                conn.execute(Q["insert_event"], event_params)
            return approval

        return await self._write(job)

    async def due_approvals(self, now: datetime, *, limit: int = 500) -> list[Approval]:
        found = await self._read("due_approvals", {"now": rows.ts(now), "limit": limit})
        return [rows.approval_from_row(row) for row in found]

    async def next_due_at(self) -> datetime | None:
        found = await self._read("next_due_at", {})
        return rows.dt(found[0][0]) if found else None

    async def record_reminder(
        self,
        approval_id: str,
        *,
        reminders_sent: int,
        next_reminder_at: datetime | None,
        escalated: bool,
    ) -> bool:
        params = {
            "id": approval_id,
            "reminders_sent": reminders_sent,
            "next_reminder_at": rows.ts(next_reminder_at),
            "escalated": escalated,
        }
        return await self._write(lambda c: c.execute(Q["record_reminder"], params).rowcount == 1)

    async def extend_deadline(
        self, approval_id: str, *, deadline: datetime | None, expected: datetime | None
    ) -> bool:
        params = {"id": approval_id, "deadline": rows.ts(deadline), "expected": rows.ts(expected)}
        return await self._write(lambda c: c.execute(Q["extend_deadline"], params).rowcount == 1)

    async def set_approval_message(
        self, approval_id: str, *, channel: str | None, ts: str | None, delivery: str
    ) -> None:
        delivery = Delivery(delivery).value  # refuse an unknown status before writing it
        params = {"id": approval_id, "channel": channel, "message_ts": ts, "delivery": delivery}
        await self._write(_update_one("set_approval_message", params, "approval"))

    async def set_callback_status(self, approval_id: str, status: str) -> None:
        params = {"id": approval_id, "callback_status": Delivery(status).value}
        await self._write(_update_one("set_callback_status", params, "approval"))

    async def undelivered_callbacks(self) -> list[Approval]:
        return [rows.approval_from_row(r) for r in await self._read("undelivered_callbacks", {})]

    # facts

    async def put_fact(self, fact: Fact) -> None:
        self._refuse_protected([fact.key])
        params = rows.fact_params(fact)
        await self._write(lambda conn: conn.execute(Q["upsert_fact"], params))

    async def get_fact(self, key: str) -> Fact:
        return rows.fact_from_row(await self._read_one("get_fact", {"key": key}, "fact"))

    async def list_facts(self) -> list[Fact]:
        return [rows.fact_from_row(row) for row in await self._read("list_facts", {})]

    async def forget_source(self, source: str) -> int:
        params = {"source": source}
        return await self._write(
            lambda conn: conn.execute(Q["delete_facts_by_source"], params).rowcount
        )

    async def load_facts(self, facts: Sequence[Fact]) -> int:
        self._refuse_protected([fact.key for fact in facts])
        params = [rows.fact_params(fact) for fact in facts]
        await self._write(lambda conn: conn.executemany(Q["upsert_fact"], params))
        return len(params)

    def _refuse_protected(self, keys: Sequence[str]) -> None:
        refuse_protected(keys, self.protected_facts)

    # pages

    async def get_page(self, page_id: str) -> Page:
        return rows.page_from_row(await self._read_one("get_page", {"id": page_id}, "page"))

    async def list_pages(self, *, open_only: bool = True) -> list[Page]:
        found = await self._read("list_pages", {"open_only": open_only})
        return [rows.page_from_row(row) for row in found]

    async def acknowledge_page(self, page_id: str, *, by: str, at: datetime) -> Page:
        params = {"id": page_id, "by": by, "at": rows.ts(at)}

        def job(conn: sqlite3.Connection) -> Page:
            changed = conn.execute(Q["acknowledge_page"], params).rowcount
            row = conn.execute(Q["get_page"], {"id": page_id}).fetchone()
            if row is None:
                raise errors.NotFound(f"no page {page_id!r}", page_id=page_id)
            page = rows.page_from_row(row)
            if not changed:
                raise errors.Conflict(
                    f"page {page_id!r} was already acknowledged by {page.acknowledged_by}",
                    page=page,
                )
            return page

        return await self._write(job)

    async def set_page_message(
        self, page_id: str, *, channel: str | None, ts: str | None, delivery: str
    ) -> None:
        delivery = Delivery(delivery).value  # refuse an unknown status before writing it
        params = {"id": page_id, "channel": channel, "message_ts": ts, "delivery": delivery}
        await self._write(_update_one("set_page_message", params, "page"))

    # outbox

    async def claim_outbox(
        self, owner: str, *, now: datetime, until: datetime, limit: int = 50
    ) -> list[OutboxItem]:
        params = {"owner": owner, "now": rows.ts(now), "until": rows.ts(until), "limit": limit}
        claimed = await self._write(lambda c: c.execute(Q["claim_outbox"], params).fetchall())
        return sorted((rows.outbox_from_row(row) for row in claimed), key=lambda i: i.id)

    async def finish_outbox(
        self, item_id: int, owner: str, *, at: datetime, error: str | None = None
    ) -> bool:
        params = {"id": item_id, "owner": owner, "at": rows.ts(at), "error": error}
        return await self._write(lambda c: c.execute(Q["finish_outbox"], params).rowcount == 1)

    async def retry_outbox(self, item_id: int, owner: str, *, at: datetime, error: str) -> bool:
        params = {"id": item_id, "owner": owner, "at": rows.ts(at), "error": error}
        return await self._write(lambda c: c.execute(Q["retry_outbox"], params).rowcount == 1)

    async def remind_open_pages(self, *, now: datetime, before: datetime) -> int:
        params = {"now": rows.ts(now), "before": rows.ts(before)}
        return await self._write(lambda c: c.execute(Q["remind_open_pages"], params).rowcount)

    async def release_outbox_claims(self, owner: str) -> int:
        params = {"owner": owner}
        return await self._write(lambda c: c.execute(Q["release_outbox_claims"], params).rowcount)

    async def outbox_waiting_before(self, item_id: int, subject_ids: Sequence[str]) -> int:
        params = {"before": item_id, "subjects": rows.dumps(list(subject_ids))}
        return int((await self._read("outbox_waiting_before", params))[0][0])

    async def outbox_backlog(self) -> tuple[int, datetime | None]:
        count, oldest = (await self._read("outbox_backlog", {}))[0]
        return count, rows.dt(oldest)

    # audit

    async def record_event(self, event: AuditEvent) -> None:
        params = rows.event_params(event)
        await self._write(lambda conn: conn.execute(Q["insert_event"], params))

    async def list_events(self, *, run_id: str | None = None) -> list[AuditEvent]:
        found = await self._read("list_events", {"run_id": run_id})
        return [rows.event_from_row(row) for row in found]

    async def list_audit(
        self,
        *,
        since: datetime | None = None,
        run_id: str | None = None,
        approval_id: str | None = None,
        after: int = 0,
        limit: int = 1000,
    ) -> list[AuditEvent]:
        params = {
            "since": rows.ts(since) if since else 0.0,
            "run_id": run_id,
            "approval_id": approval_id,
            "after": after,
            "limit": limit,
        }
        return [rows.event_from_row(row) for row in await self._read("list_audit", params)]

    async def operational_counts(self) -> OperationalCounts:
        row = (await self._read("operational_counts", {}))[0]
        return OperationalCounts(
            runs_running=row["runs_running"],
            runs_waiting_approval=row["runs_waiting_approval"],
            approvals_pending=row["approvals_pending"],
            oldest_pending_at=rows.dt(row["oldest_pending_at"]),
            effects_in_doubt=row["effects_in_doubt"],
            pages_open=row["pages_open"],
            outbox_backlog=row["outbox_backlog"],
            outbox_oldest_at=rows.dt(row["outbox_oldest_at"]),
        )

    # leases

    async def acquire_lease(
        self, run_id: str, owner: str, *, until: datetime, now: datetime
    ) -> bool:
        params = {"id": run_id, "owner": owner, "until": rows.ts(until), "now": rows.ts(now)}
        return await self._write(lambda c: c.execute(Q["acquire_lease"], params).rowcount == 1)

    async def renew_lease(self, run_id: str, owner: str, *, until: datetime) -> bool:
        params = {"id": run_id, "owner": owner, "until": rows.ts(until)}
        return await self._write(lambda c: c.execute(Q["renew_lease"], params).rowcount == 1)

    async def release_lease(self, run_id: str, owner: str) -> None:
        params = {"id": run_id, "owner": owner}
        await self._write(lambda conn: conn.execute(Q["release_lease"], params))

    async def runs_to_recover(self, now: datetime, *, owner: str) -> list[str]:
        found = await self._read("runs_to_recover", {"now": rows.ts(now), "owner": owner})
        return [row[0] for row in found]

    async def interrupted_undos(self, now: datetime, *, owner: str) -> list[str]:
        found = await self._read("interrupted_undos", {"now": rows.ts(now), "owner": owner})
        return [row[0] for row in found]


def _daemon(connection: aiosqlite.Connection) -> aiosqlite.Connection:
    """A reader whose thread never keeps the process alive: a script that raised or forgot
    `close()` still exits (what was committed is durable; the reader only reads)."""
    connection._thread.daemon = True  # aiosqlite has no option for it
    return connection


def _already_decided(approval: Approval) -> errors.AlreadyDecided:
    return errors.AlreadyDecided(
        f"approval {approval.id!r} was already {approval.state.value} by {approval.decided_by}",
        approval=approval,
    )


def _update_one(
    name: str, params: dict[str, Any], what: str
) -> Callable[[sqlite3.Connection], None]:
    def job(conn: sqlite3.Connection) -> None:
        if conn.execute(Q[name], params).rowcount != 1:
            raise errors.NotFound(f"no {what} {params['id']!r}", id=params["id"])

    return job
