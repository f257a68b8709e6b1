"""One job, long because it is every Store method once: the SQL backends' store.

Every `Store` method, once, for the SQL backends.

A method prepares its parameters (`store.rows`), then either reads through a named query or
hands a transaction body (`store.core`) to the backend. A backend supplies only `_read` and
`_write` (and opening, closing and migrating): which driver runs the SQL, in which dialect.
It is the one table of what each method does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from collections.abc import Sequence
from datetime import UTC
from datetime import datetime
from typing import Any
from typing import TypeVar

from store import cool_off as cool_offs
from store import core
from store import envelopes
from store import errors
from store import learned
from store import read_results
from store import rows
from store import shared
from store import spend
from store.base import ANYONE
from store.base import ApprovalPage
from store.base import Batch
from store.base import Claims
from store.base import Committed
from store.base import OperationalCounts
from store.base import Ruling
from store.base import Voted
from store.base import check_new_run
from store.base import refuse_protected
from store.core import MakeBody
from store.digest import packed
from store.records import Approval
from store.records import ApprovalState
from store.records import AuditAnchor
from store.records import AuditEvent
from store.records import Authority
from store.records import Away
from store.records import Budget
from store.records import Checkpoint
from store.records import Delivery
from store.records import Effect
from store.records import EffectReuse
from store.records import Envelope
from store.records import Fact
from store.records import LearnedRule
from store.records import LimitState
from store.records import OutboxItem
from store.records import Page
from store.records import Passkey
from store.records import Run
from store.records import RunState
from store.records import RunStatus
from store.records import Worker

T = TypeVar("T")
Row = Mapping[str, Any]
CHALLENGES_FORGOTTEN = 100
"""At most this many unanswered, expired passkey challenges are dropped per challenge kept."""


class SqlStore:
    url: str
    protected_facts: frozenset[str]
    clock: rows.Clock | None = None
    """The clock deadlines are judged by; None: the database's own (`now()`). A store is
    given one at open time when something else must decide what time it is (a test that
    moves time by hand cannot move PostgreSQL's `now()`)."""
    known_schema: int = 0
    """The newest schema version this Signoff's migrations go to: what its records can read.
    Said with every lease it takes; its claims take nothing from a newer schema."""

    def _judge_now(self) -> float | None:
        return rows.judge_now(self.clock)

    def _spend_now(self) -> float | None:
        """The time limits' windows are judged by, when the store knows it without asking the
        database (a clock of its own); None: the transaction reads the database's."""
        return self._judge_now()

    async def _write(self, make: MakeBody[T], *, durable: bool = True) -> T:
        """Run a fresh body from `make` in one transaction (it may be run again on a retry).

        `durable=False`: the transaction need not reach the disk before it returns (a lease:
        a hint to other workers, which expires by itself); a later durable one takes it
        there, and a crash of the process loses nothing."""
        raise NotImplementedError

    async def _read(self, name: str, params: dict[str, Any]) -> list[Any]:
        raise NotImplementedError

    async def _read_one(self, name: str, params: dict[str, Any], what: str) -> Any:
        found = await self._read(name, params)
        if not found:
            raise errors.NotFound(f"no {what}", **params)
        return found[0]

    async def _one(
        self, name: str, params: Any, fetch: core.Fetch = "none", *, durable: bool = True
    ) -> Any:
        return await self._write(lambda: core.one(name, params, fetch), durable=durable)

    async def _changed_one(
        self, name: str, params: dict[str, Any], *, durable: bool = True
    ) -> bool:
        return await self._write(lambda: core.changed_one(name, params), durable=durable)

    async def _update_one(self, name: str, params: dict[str, Any], what: str) -> None:
        await self._write(lambda: core.update_one(name, params, what))

    # runs

    async def create_run(
        self, run: Run, snapshot: Checkpoint, *, events: Sequence[AuditEvent] = ()
    ) -> None:
        check_new_run(run, snapshot, events)
        run_params, cp_params = rows.run_params(run), rows.checkpoint_params(snapshot)
        event_params = [rows.event_params(event) for event in events]
        try:
            await self._write(lambda: core.create_run(run_params, cp_params, event_params))
        except errors.AlreadyExists as exc:
            raise errors.AlreadyExists(f"run {run.id!r} already exists", run_id=run.id) from exc

    async def get_run(self, run_id: str) -> Run:
        row = await self._read_one("get_run", {"id": run_id}, f"run {run_id!r}")
        return rows.run_from_row(row)

    async def list_runs(self, status: RunStatus | None = None, *, limit: int = 100) -> list[Run]:
        if status is None:
            found = await self._read("list_runs", {"limit": limit})
        else:
            params = {"status": RunStatus(status).value, "limit": limit}
            found = await self._read("list_runs_by_status", params)
        return [rows.run_from_row(row) for row in found]

    async def page_runs(
        self,
        *,
        status: RunStatus | None = None,
        agent: str | None = None,
        requested_by: str | None = None,
        after: tuple[datetime, str] | None = None,
        limit: int = 100,
    ) -> list[Run]:
        params = {
            "status": None if status is None else RunStatus(status).value,
            "agent": agent,
            "requested_by": requested_by,
            **_cursor(after),
            "limit": limit,
        }
        return [rows.run_from_row(row) for row in await self._read("page_runs", params)]

    async def set_run_budget(self, run_id: str, budget: Budget, *, at: datetime) -> None:
        params = {
            "id": run_id,
            "budget": budget.model_dump_json(exclude_defaults=True),
            "updated_at": rows.ts(at),
        }
        await self._update_one("set_run_budget", params, "run")

    async def set_run_model(self, run_id: str, model: dict[str, Any], *, at: datetime) -> None:
        params = {"id": run_id, "model": rows.dumps(model), "updated_at": rows.ts(at)}
        await self._update_one("set_run_model", params, "run")

    async def prune_runs(self, finished_before: datetime) -> int:
        return (await self.prune(finished_before, include_audit=False))[0]

    async def prune(self, finished_before: datetime, *, include_audit: bool) -> tuple[int, int]:
        before = rows.ts(finished_before)
        return await self._write(lambda: core.prune(before, include_audit=include_audit))

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

    # history

    async def commit(self, batch: Batch) -> Committed:
        timed = batch.request or batch.spend or batch.ended_calls or batch.undo_ended
        if not timed:  # a step's batch: nothing in it is timed
            return await self._write(core.commit(batch))
        make = core.commit(batch, test_now=self._judge_now(), spend_now=self._spend_now())
        return await self._write(make)

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
        found = await self._read_one("get_effect", params, "effect")
        return (await self._effects(run_id, [found]))[0]

    async def list_effects(self, run_id: str) -> list[Effect]:
        return await self._effects(run_id, await self._read("list_effects", {"run_id": run_id}))

    async def _effects(self, run_id: str, found: Sequence[Any]) -> list[Effect]:
        """A run's effects from their rows, each read's result from its tool message where
        the row keeps only where that is (`store.read_results`)."""
        seqs = read_results.wanted(found)
        if not seqs:
            return [rows.effect_from_row(row) for row in found]
        params = {"run_id": run_id, "seqs": json.dumps(seqs)}
        return read_results.effects(found, await self._read("checkpoint_messages", params))

    async def find_effect(self, lineage_id: str, idempotency_key: str) -> Effect | None:
        params = {"lineage_id": lineage_id, "idempotency_key": idempotency_key}
        found = await self._read("completed_effect_by_key", params)
        return rows.effect_from_row(found[0]) if found else None

    async def conflicting_effect(self, idempotency_key: str, args_digest: str) -> Effect | None:
        params = {"idempotency_key": idempotency_key, "args_digest": packed(args_digest)}
        found = await self._read("conflicting_effect_by_key", params)
        return rows.effect_from_row(found[0]) if found else None

    async def effect_group(self, run_id: str, call_id: str) -> list[EffectReuse]:
        found = await self._read("effect_group", {"run_id": run_id, "call_id": call_id})
        return [rows.reuse_from_row(row) for row in found]

    async def mark_reuses_undone(self, marks: Sequence[tuple[EffectReuse, AuditEvent]]) -> int:
        return await self._write(lambda: shared.mark_undone(marks))

    # approvals

    async def create_approval(self, approval: Approval) -> None:
        params = rows.approval_params(approval, self._judge_now())
        await self._write(lambda: core.create_approval(approval, params))

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
        state_value = None if state is None else ApprovalState(state).value
        params = {"run_id": run_id, "state": state_value, "limit": limit}
        if run_id is not None:
            found = await self._read("list_approvals_of_run", params)
        elif state is not None:
            found = await self._read("list_approvals_by_state", params)
        else:
            found = await self._read("list_approvals", params)
        return [rows.approval_from_row(row) for row in found]

    async def approvals_of_person(
        self, user: str, *, since: datetime, limit: int
    ) -> list[Approval]:
        params = {"user": user, "since": rows.ts(since), "limit": limit}
        found = await self._read("approvals_of_person", params)
        return [rows.approval_from_row(row) for row in found]

    async def page_approvals(
        self,
        *,
        state: ApprovalState | None = None,
        run_id: str | None = None,
        tool: str | None = None,
        requested_by: str | None = None,
        after: tuple[datetime, str] | None = None,
        limit: int = 100,
    ) -> list[Approval]:
        params = {
            "state": None if state is None else ApprovalState(state).value,
            "run_id": run_id,
            "tool": tool,
            "requested_by": requested_by,
            **_cursor(after),
            "limit": limit,
        }
        found = await self._read("page_approvals", params)
        return [rows.approval_from_row(row) for row in found]

    async def decider_groups(self) -> list[str]:
        found = await self._read("decider_groups", {})
        return [row[0] for row in found]

    async def pending_for(
        self,
        user: str,
        *,
        groups: Sequence[str] = (),
        after: tuple[datetime, str] | None = None,
        limit: int = 10,
    ) -> ApprovalPage:
        deciders = json.dumps([user, *groups, ANYONE])
        params = {"user": user, "deciders": deciders, **_cursor(after), "limit": limit}
        found = await self._read("pending_for_deciders", params)
        waiting = int(found[0]["waiting"]) if found else 0
        return ApprovalPage([rows.approval_from_row(row) for row in found], waiting)

    async def cast_vote(
        self,
        approval_id: str,
        ruling: Ruling,
        *,
        open_only: bool = False,
        event: AuditEvent | None = None,
        link_nonce: str | None = None,
    ) -> Voted:
        params = self._decision_params(approval_id, ruling, due_only=False, open_only=open_only)
        params["link_nonce"] = link_nonce
        event_params = rows.event_params(event) if event else None
        if event_params is not None and link_nonce is None and ruling.spend_amounts is None:
            decided = await self._decide_at_once(params, event_params)
            if decided is not None:
                return Voted(decided, 0)
        approval, votes = await self._write(lambda: core.cast_vote(params, event_params))
        return Voted(approval, votes)

    async def _decide_at_once(
        self, params: dict[str, Any], event: dict[str, Any]
    ) -> Approval | None:
        """A decision that needs nothing but its row in one statement, where the dialect has
        one (`decide_at_once`): the approval decided, or None, having written nothing, for
        `cast_vote`'s body to decide (or say why not)."""
        return None

    async def list_votes(self, approval_id: str) -> list[str]:
        found = await self._read("list_votes", {"approval_id": approval_id})
        return [row[0] for row in found]

    async def set_receipt(self, approval_id: str, receipt: dict[str, Any]) -> Approval:
        params = {"id": approval_id, "receipt": rows.dumps(receipt)}
        await self._changed_one("set_approval_receipt", params)
        return await self.get_approval(approval_id)

    async def decide_approval(
        self,
        approval_id: str,
        ruling: Ruling,
        *,
        due_only: bool = False,
        open_only: bool = False,
        event: AuditEvent | None = None,
    ) -> Approval:
        params = self._decision_params(approval_id, ruling, due_only=due_only, open_only=open_only)
        event_params = rows.event_params(event) if event else None
        return await self._write(
            lambda: core.decide_approval(params, event_params, timeout=due_only)
        )

    def _decision_params(
        self, approval_id: str, ruling: Ruling, *, due_only: bool, open_only: bool
    ) -> dict[str, Any]:
        """A decision's parameters, for `core.cast_vote` and `core.decide_approval`."""
        return {
            "id": approval_id,
            "state": ApprovalState(ruling.state).value,
            "decided_by": ruling.by,
            "decided_at": rows.ts(ruling.at),
            "reason": ruling.reason,
            "approved_args": rows.maybe_dumps(ruling.approved_args),
            "due_only": due_only,
            "open_only": open_only,
            "test_now": self._judge_now(),
            "approved_digest": ruling.approved_digest,
            "key_suffix": ruling.key_suffix,
            "question": ruling.question,
            "decided_for": ruling.decided_for,
            "spend_amounts": ruling.spend_amounts,
            "spend_now": self._spend_now(),
        }

    async def approvals_without_authority(self, *, limit: int = 500) -> list[Approval]:
        found = await self._read("approvals_without_authority", {"limit": limit})
        return [rows.approval_from_row(row) for row in found]

    async def fill_authority(
        self, approval_id: str, authority: Authority, *, event: AuditEvent
    ) -> bool:
        params = {"id": approval_id, "authority": authority.model_dump_json()}
        event_params = rows.event_params(event)
        return await self._write(lambda: core.fill_authority(params, event_params))

    async def due_approvals(self, *, limit: int = 500) -> list[Approval]:
        found = await self._read("due_approvals", {"test_now": self._judge_now(), "limit": limit})
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
        return await self._write(lambda: core.record_reminder(params))

    async def extend_deadline(
        self, approval_id: str, *, deadline: datetime | None, expected: datetime | None
    ) -> bool:
        params = {"id": approval_id, "deadline": rows.ts(deadline), "expected": rows.ts(expected)}
        return await self._write(lambda: core.extend_deadline(params))

    async def record_waiter(self, approval_id: str, *, seconds: float) -> bool | None:
        params = {"id": approval_id, "seconds": seconds, "test_now": self._judge_now()}
        return await self._write(lambda: core.record_waiter(params), durable=False)

    async def waiter_left(self, approval_id: str) -> bool:
        params = {"id": approval_id, "test_now": self._judge_now()}
        return await self._write(lambda: core.waiter_left(params))

    async def advance_cool_off(
        self,
        approval_id: str,
        *,
        cool_off: float | None,
        undo: float | None,
        event: AuditEvent,
    ) -> Approval:
        params = {"id": approval_id, "test_now": self._judge_now()}
        return await self._write(lambda: cool_offs.advance(params, cool_off, undo, event))

    async def cancel_cool_off(self, approval_id: str, *, by: str, event: AuditEvent) -> bool:
        params = {"id": approval_id, "by": by}
        return await self._write(lambda: cool_offs.cancel(params, event))

    async def claim_undo(self, approval_id: str, *, by: str, events: Sequence[AuditEvent]) -> bool:
        params = {"id": approval_id, "by": by, "test_now": self._judge_now()}
        return await self._write(lambda: cool_offs.claim_undo(params, events))

    async def cool_offs_ended(self, *, limit: int = 100) -> list[str]:
        found = await self._read("cool_offs_ended", {"test_now": self._judge_now(), "limit": limit})
        return [row[0] for row in found]

    async def next_cool_off_end(self) -> datetime | None:
        found = await self._read("next_cool_off_end", {"test_now": self._judge_now()})
        return rows.dt(found[0][0]) if found else None

    async def set_approval_message(
        self, approval_id: str, *, channel: str | None, ts: str | None, delivery: str
    ) -> None:
        delivery = Delivery(delivery).value  # refuse an unknown status before writing it
        params = {"id": approval_id, "channel": channel, "message_ts": ts, "delivery": delivery}
        await self._update_one("set_approval_message", params, "approval")

    async def set_callback_status(self, approval_id: str, status: str) -> None:
        params = {"id": approval_id, "callback_status": Delivery(status).value}
        await self._update_one("set_callback_status", params, "approval")

    async def undelivered_callbacks(self) -> list[Approval]:
        return [rows.approval_from_row(r) for r in await self._read("undelivered_callbacks", {})]

    # facts

    async def put_fact(self, fact: Fact) -> None:
        refuse_protected([fact.key], self.protected_facts)
        await self._one("upsert_fact", rows.fact_params(fact))

    async def get_fact(self, key: str) -> Fact:
        return rows.fact_from_row(await self._read_one("get_fact", {"key": key}, "fact"))

    async def list_facts(self) -> list[Fact]:
        return [rows.fact_from_row(row) for row in await self._read("list_facts", {})]

    async def forget_source(self, source: str) -> int:
        return int(await self._one("delete_facts_by_source", {"source": source}, "count"))

    async def load_facts(self, facts: Sequence[Fact]) -> int:
        refuse_protected([fact.key for fact in facts], self.protected_facts)
        params = [rows.fact_params(fact) for fact in facts]
        if params:
            await self._one("upsert_fact", params, "many")
        return len(params)

    # pages

    async def get_page(self, page_id: str) -> Page:
        return rows.page_from_row(await self._read_one("get_page", {"id": page_id}, "page"))

    async def list_pages(self, *, open_only: bool = True, run_id: str | None = None) -> list[Page]:
        if run_id is not None:
            found = await self._read("pages_of_run", {"run_id": run_id, "open_only": open_only})
        else:
            found = await self._read("list_pages", {"open_only": open_only})
        return [rows.page_from_row(row) for row in found]

    async def open_pages_for(self, user: str | None, *, limit: int) -> list[Page]:
        found = await self._read("open_pages_for", {"user": user, "limit": limit})
        return [rows.page_from_row(row) for row in found]

    async def acknowledge_page(self, page_id: str, *, by: str, at: datetime) -> Page:
        params = {"id": page_id, "by": by, "at": rows.ts(at)}
        return await self._write(lambda: core.acknowledge_page(params))

    async def add_page_evidence(self, run_id: str, call_id: str, evidence: str) -> int:
        params = {"run_id": run_id, "call_id": call_id, "evidence": evidence}
        return int(await self._one("add_page_evidence", params, "count"))

    async def set_page_message(
        self, page_id: str, *, channel: str | None, ts: str | None, delivery: str
    ) -> None:
        delivery = Delivery(delivery).value  # refuse an unknown status before writing it
        params = {"id": page_id, "channel": channel, "message_ts": ts, "delivery": delivery}
        await self._update_one("set_page_message", params, "page")

    async def adopt_message(self, kind: str, subject_id: str, *, channel: str, ts: str) -> bool:
        params = {"id": subject_id, "channel": channel, "message_ts": ts}
        if kind == "approval":
            return await self._changed_one("adopt_approval_message", params)
        if kind == "page":
            return await self._changed_one("adopt_page_message", params)
        raise ValueError(f"kind: 'approval' or 'page', not {kind!r}")

    # outbox

    async def claim_outbox(
        self, owner: str, *, now: datetime, until: datetime, limit: int = 50, email: bool = False
    ) -> list[OutboxItem]:
        params = {"owner": owner, "limit": limit, "test_now": self._judge_now(), "email": email}
        params |= _lease_times(now, until) | {"known_schema": self.known_schema}
        claimed = await self._write(lambda: core.claim_outbox(params))
        return sorted((rows.outbox_from_row(row) for row in claimed), key=lambda i: i.id)

    async def finish_outbox(
        self, item_id: int, owner: str, *, at: datetime, error: str | None = None
    ) -> bool:
        params = {"id": item_id, "owner": owner, "at": rows.ts(at), "error": error}
        return await self._changed_one("finish_outbox", params)

    async def retry_outbox(self, item_id: int, owner: str, *, after: float, error: str) -> bool:
        params = {"id": item_id, "owner": owner, "after": after, "error": error}
        return await self._changed_one("retry_outbox", params | {"test_now": self._judge_now()})

    async def remind_open_pages(self, *, now: datetime, before: datetime) -> int:
        params = {"now": rows.ts(now), "before": rows.ts(before), "test_now": self._judge_now()}
        return await self._write(lambda: core.remind_open_pages(params))

    async def queue_home_refresh(self, subjects: Sequence[str]) -> int:
        if not subjects:
            return 0
        params = {"subjects": rows.dumps(sorted(set(subjects))), "test_now": self._judge_now()}
        return int(await self._one("queue_home_refresh", params, "count"))

    async def email_link_used(self, nonce: str) -> datetime | None:
        found = await self._read("email_link_used", {"nonce": nonce})
        return rows.utc(found[0]["used_at"]) if found else None

    async def set_away(self, person: str, *, until: datetime, delegate: str, at: datetime) -> None:
        params = {"person": person, "until": rows.ts(until), "delegate": delegate}
        await self._one("set_away", params | {"set_at": rows.ts(at)})

    async def clear_away(self, person: str) -> bool:
        return await self._changed_one("clear_away", {"person": person})

    async def list_away(self, *, now: datetime) -> list[Away]:
        found = await self._read("list_away", {"now": rows.ts(now)})
        return [
            Away(
                person=row["person"],
                until=rows.utc(row["until"]),
                delegate=row["delegate"],
                set_at=rows.utc(row["set_at"]),
            )
            for row in found
        ]

    async def release_outbox_claims(self, owner: str) -> int:
        return int(await self._one("release_outbox_claims", {"owner": owner}, "count"))

    async def outbox_waiting_before(self, item_id: int, subject_ids: Sequence[str]) -> int:
        params = {"before": item_id, "subjects": rows.dumps(list(subject_ids))}
        return int((await self._read("outbox_waiting_before", params))[0][0])

    async def outbox_backlog(self) -> tuple[int, datetime | None]:
        count, oldest = (await self._read("outbox_backlog", {}))[0]
        return count, rows.dt(oldest)

    # requests from outside, handled once

    async def note_inbound(self, key: str, *, keep_for: float) -> bool:
        # Not synced before it returns: a note a crash loses lets a retry be handled again
        # (every handler is idempotent), while one that outlived its handling would lose it.
        params = {"key": key, "keep_for": keep_for, "test_now": self._judge_now()}
        return await self._one("note_inbound", params, "one", durable=False) is not None

    async def forget_inbound(self, *, limit: int = 1000) -> int:
        params = {"limit": limit, "test_now": self._judge_now()}
        return int(await self._one("forget_inbound", params, "count", durable=False))

    # audit

    async def record_event(self, event: AuditEvent) -> None:
        await self._write(lambda: core.insert_event(event))

    async def add_anchor(self, kind: str, *, at: datetime | None = None) -> AuditAnchor | None:
        return await self._write(lambda: core.add_anchor(kind, rows.ts(at)))

    async def claim_sink(self, name: str, owner: str, *, ttl: float) -> int | None:
        params = {"name": name, "owner": owner, "ttl": ttl}
        row = await self._one("claim_sink", params, "one", durable=False)
        return None if row is None else int(row[0])

    async def advance_sink(self, name: str, owner: str, *, start: int, to: int) -> bool:
        params = {"name": name, "owner": owner, "start": start, "to": to}
        return await self._changed_one("advance_sink", params)

    async def release_sink(self, name: str, owner: str) -> None:
        await self._one("release_sink", {"name": name, "owner": owner})

    async def count_audit_after(self, after: int) -> int:
        return int((await self._read("count_audit_after", {"after": after}))[0][0])

    async def list_anchors(self) -> list[AuditAnchor]:
        return [rows.anchor_from_row(row) for row in await self._read("list_anchors", {})]

    async def sign_anchor(self, anchor: AuditAnchor, signed: dict[str, Any]) -> None:
        params = {"seq": anchor.seq, "kind": anchor.kind, "signed": rows.dumps(signed)}
        await self._changed_one("sign_anchor", params)

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

    # learned rules (store.learned)

    async def create_learned_rule(self, rule: LearnedRule, *, event: AuditEvent) -> None:
        await self._write(lambda: learned.create(rule, event))

    async def list_learned_rules(
        self, *, tool: str | None = None, rule_id: str | None = None
    ) -> list[LearnedRule]:
        found = await self._read("list_learned_rules", {"tool": tool, "id": rule_id})
        return [learned.rule_from_row(row) for row in found]

    async def learned_rules_in_force(self, tool: str, *, now: datetime) -> list[LearnedRule]:
        found = await self._read("learned_rules_in_force", {"tool": tool, "now": rows.ts(now)})
        return [learned.rule_from_row(row) for row in found]

    async def get_learned_rule(self, rule_id: str) -> LearnedRule:
        found = await self.list_learned_rules(rule_id=rule_id)
        if not found:
            raise errors.NotFound(f"no rule {rule_id!r}", id=rule_id)
        return found[0]

    async def confirm_learned_rule(
        self, rule_id: str, *, by: str, at: datetime, event: AuditEvent
    ) -> bool:
        params = {"id": rule_id, "by": by, "at": rows.ts(at)}
        return await self._write(lambda: learned.confirm(params, event))

    async def revoke_learned_rule(
        self, rule_id: str, *, by: str, at: datetime, event: AuditEvent
    ) -> bool:
        params = {"id": rule_id, "by": by, "at": rows.ts(at)}
        return await self._write(lambda: learned.revoke(params, event))

    async def learned_rules_expiring(self, *, now: datetime, before: datetime) -> list[LearnedRule]:
        params = {"now": rows.ts(now), "before": rows.ts(before)}
        found = await self._read("learned_rules_expiring", params)
        return [learned.rule_from_row(row) for row in found]

    async def mark_learned_rule_reminded(self, rule_id: str, *, at: datetime) -> bool:
        params = {"id": rule_id, "at": rows.ts(at), "test_now": self._judge_now()}
        return await self._write(lambda: learned.mark_reminded(params))

    async def learned_rule_uses_since(
        self, rule_id: str, *, after: datetime
    ) -> list[tuple[str, str | None, datetime]]:
        params = {"rule_id": rule_id, "after": rows.ts(after)}
        found = await self._read("learned_rule_uses_since", params)
        return [(row["id"], row["run_id"], rows.utc(row["created_at"])) for row in found]

    async def mark_learned_rule_noted(
        self, rule_id: str, *, since: datetime, until: datetime
    ) -> bool:
        params = {
            "id": rule_id,
            "since": rows.ts(since),
            "until": rows.ts(until),
            "test_now": self._judge_now(),
        }
        detail = rows.dumps(
            {"rule_id": rule_id, "since": since.isoformat(), "until": until.isoformat()}
        )
        return await self._write(lambda: learned.mark_noted(params, detail))

    async def backtest_requests(self, tool: str, *, limit: int) -> list[dict[str, Any]]:
        found = await self._read("backtest_requests", {"tool": tool, "limit": limit})
        return [learned.request_from_row(row) for row in found]

    # limits over history and envelopes (store.spend, store.envelopes)

    async def limit_usage(self, states: Sequence[LimitState]) -> list[tuple[int, int]]:
        """Read from a few buckets per window, however long the history."""
        if not states:
            return []
        now = (await self.database_now()).timestamp()
        keyed = [s.model_copy(update={"key": s.key or ""}) for s in states]
        found = await self._read("spend_used_many", spend.window_claims(keyed, now))
        return [(s.used, s.calls) for s in spend.filled(keyed, found)]

    async def holds_of_run(self, run_id: str) -> list[dict[str, Any]]:
        found = await self._read("holds_of_run", {"run_id": run_id})
        return [_hold(row) for row in found]

    async def record_limits(
        self, definitions: Mapping[str, str], events: Mapping[str, AuditEvent], *, at: datetime
    ) -> list[str]:
        stamp = rows.ts(at) or 0.0
        return await self._write(lambda: envelopes.record_limits(definitions, events, stamp))

    async def create_envelope(self, envelope: Envelope, *, event: AuditEvent) -> None:
        await self._write(lambda: envelopes.create(envelope, event))

    async def list_envelopes(
        self, *, tool: str | None = None, envelope_id: str | None = None, limit: int = 100
    ) -> list[Envelope]:
        params = {"tool": tool, "id": envelope_id, "limit": limit}
        return [envelopes.envelope_from_row(r) for r in await self._read("list_envelopes", params)]

    async def get_envelope(self, envelope_id: str) -> Envelope:
        found = await self.list_envelopes(envelope_id=envelope_id, limit=1)
        if not found:
            raise errors.NotFound(f"no envelope {envelope_id!r}", id=envelope_id)
        return found[0]

    async def envelopes_in_force(self, tool: str, *, now: datetime) -> list[Envelope]:
        found = await self._read("envelopes_in_force", {"tool": tool, "now": rows.ts(now)})
        return [envelopes.envelope_from_row(row) for row in found]

    async def confirm_envelope(
        self, envelope_id: str, *, by: str, at: datetime, event: AuditEvent
    ) -> bool:
        params = {"id": envelope_id, "by": by, "at": rows.ts(at)}
        return await self._write(lambda: envelopes.confirm(params, event))

    async def revoke_envelope(
        self, envelope_id: str, *, by: str, at: datetime, event: AuditEvent
    ) -> bool:
        params = {"id": envelope_id, "by": by, "at": rows.ts(at), "test_now": self._judge_now()}
        return await self._write(lambda: envelopes.revoke(params, event))

    async def end_expired_envelopes(self) -> list[str]:
        test_now = self._judge_now()
        return await self._write(lambda: envelopes.end_expired(test_now))

    async def set_envelope_message(
        self, envelope_id: str, *, channel: str | None, ts: str | None
    ) -> None:
        params = {"id": envelope_id, "channel": channel, "message_ts": ts}
        await self._update_one("set_envelope_message", params, "envelope")

    # leases: not synced on their own (durable=False). A lease only tells other workers to
    # keep off, and expires by itself; every write that counts checks it inside its own
    # transaction and is synced, which takes the lease before it to the disk too.

    async def acquire_lease(
        self, run_id: str, owner: str, *, until: datetime, now: datetime
    ) -> int | None:
        params = {"id": run_id, "owner": owner, "known_schema": self.known_schema}
        taken = await self._one(
            "acquire_lease", params | _lease_times(now, until), "all", durable=False
        )
        return int(taken[0][0]) if taken else None

    async def renew_lease(
        self,
        run_id: str,
        owner: str,
        *,
        until: datetime,
        now: datetime | None = None,
        epoch: int | None = None,
    ) -> bool:
        times = _lease_times(now or datetime.now(UTC), until)
        params = {"id": run_id, "owner": owner, "epoch": epoch} | times
        return await self._changed_one("renew_lease", params, durable=False)

    async def release_lease(self, run_id: str, owner: str, *, epoch: int | None = None) -> None:
        params = {"id": run_id, "owner": owner, "epoch": epoch}
        await self._one("release_lease", params, "one", durable=False)

    # the run queue: claims are leases, so like leases they are not synced on their own

    async def claim_runs(self, owner: str, *, limit: int, until: datetime, now: datetime) -> Claims:
        params = {"owner": owner, "limit": limit, "known_schema": self.known_schema}
        params |= _lease_times(now, until)
        return await self._write(lambda: core.claim_runs(params), durable=False)

    async def requeue_runs(self) -> int:
        return int(await self._one("requeue_runs", {}, "count", durable=False))

    async def ready_decided_runs(self, run_ids: Sequence[str]) -> None:
        if run_ids:
            params = [{"run_id": run_id} for run_id in run_ids]
            await self._one("ready_decided_run", params, "many", durable=False)

    async def release_own_leases(self, owner: str) -> int:
        params = {"owner": owner}
        return int(await self._one("release_own_leases", params, "count", durable=False))

    async def ready_runs(self) -> tuple[int, datetime | None]:
        count, oldest = (await self._read("ready_runs", {}))[0]
        return int(count), rows.dt(oldest)

    async def next_lease_lapse(self, *, owner: str, now: datetime) -> float | None:
        found = await self._read("next_lease_lapse", {"owner": owner, "now": rows.ts(now)})
        return None if not found or found[0][0] is None else float(found[0][0])

    async def record_worker(
        self, worker_id: str, *, config_digest: str, started_at: datetime
    ) -> None:
        params = {
            "id": worker_id,
            "config_digest": config_digest,
            "started_at": rows.ts(started_at),
        }
        await self._one("record_worker", params, durable=False)

    async def add_passkey(self, passkey: Passkey) -> bool:
        return await self._changed_one("insert_passkey", rows.passkey_params(passkey))

    async def list_passkeys(self, person: str) -> list[Passkey]:
        found = await self._read("list_passkeys", {"person": person})
        return [rows.passkey_from_row(row) for row in found]

    async def use_passkey(self, passkey_id: str, *, person: str, sign_count: int) -> bool:
        params = {"id": passkey_id, "person": person, "sign_count": sign_count}
        return await self._changed_one("use_passkey", params)

    async def keep_challenge(
        self, challenge: str, *, person: str, purpose: str, ttl: float
    ) -> None:
        judge = self._judge_now()
        forget = {"limit": CHALLENGES_FORGOTTEN, "test_now": judge}
        await self._one("forget_challenges", forget, "count", durable=False)
        params = {"challenge": challenge, "person": person, "purpose": purpose, "ttl": ttl}
        await self._one("keep_challenge", params | {"test_now": judge})

    async def take_challenge(self, challenge: str) -> tuple[str, str] | None:
        params = {"challenge": challenge, "test_now": self._judge_now()}
        found = await self._one("take_challenge", params, "one")
        return (str(found[0]), str(found[1])) if found is not None else None

    async def list_workers(self, *, within: float) -> list[Worker]:
        found = await self._read("list_workers", {"ago": -within})
        return [rows.worker_from_row(row) for row in found]

    async def database_now(self) -> datetime:
        if self.clock is not None:
            return self.clock()
        found = await self._read("database_now", {})
        return rows.dt(found[0][0]) or datetime.now(UTC)

    async def runs_to_recover(self, now: datetime, *, owner: str) -> list[str]:
        found = await self._read("runs_to_recover", {"now": rows.ts(now), "owner": owner})
        return [row[0] for row in found]

    async def interrupted_undos(self, now: datetime, *, owner: str) -> list[str]:
        found = await self._read("interrupted_undos", {"now": rows.ts(now), "owner": owner})
        return [row[0] for row in found]


def _lease_times(now: datetime, until: datetime) -> dict[str, Any]:
    """A lease's times for either dialect: SQLite's queries take `now` and `until` (one
    machine, one clock); PostgreSQL's take only the length, `ttl`, and date it by the server's
    clock, so a worker whose clock is off cannot take or keep a lease by its own reckoning."""
    ttl = (until - now).total_seconds()
    return {"now": rows.ts(now), "until": rows.ts(until), "ttl": ttl}


def _cursor(after: tuple[datetime, str] | None) -> dict[str, Any]:
    """A page's position as query parameters: after this (created_at, id), or from the start."""
    if after is None:
        return {"after_at": None, "after_id": None}
    return {"after_at": rows.ts(after[0]), "after_id": after[1]}


def _hold(row: Row) -> dict[str, Any]:
    found = dict(row)
    found.update(held_at=rows.dt(row["held_at"]), ended_at=rows.dt(row["ended_at"]))
    return found
