"""Records to column values and back, the same for every SQL dialect.

Times become epoch seconds; structured values become compact JSON text.

Each record has its two short functions, to columns and back."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic_core import to_json

from store.digest import args_digest
from store.records import (
    MESSAGES,
    Approval,
    ApprovalState,
    AuditEvent,
    Budget,
    Checkpoint,
    Effect,
    EffectOutcome,
    Fact,
    Message,
    OutboxItem,
    Page,
    Run,
    RunState,
    Usage,
)

Row = Mapping[str, Any]

Clock = Callable[[], datetime]


def judge_now(clock: Clock | None) -> float | None:
    """The `:test_now` parameter of the queries that judge a deadline: None (the SQL then
    reads the database's own `now()`) unless the store was opened with a clock of its own."""
    return None if clock is None else ts(clock())


def ts(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def dt(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def utc(value: float) -> datetime:
    return datetime.fromtimestamp(value, UTC)


def dumps(value: Any) -> str:
    return to_json(value).decode()


def maybe_dumps(value: Any) -> str | None:
    return None if value is None else dumps(value)


def maybe_loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def messages_json(messages: tuple[Message, ...]) -> str:
    return MESSAGES.dump_json(messages, exclude_defaults=True).decode()


def join_messages(chunks: Iterable[str]) -> tuple[Message, ...]:
    """Parse several JSON arrays of messages as one, in a single pass."""
    inner = [chunk[1:-1] for chunk in chunks if chunk != "[]"]
    return MESSAGES.validate_json(f"[{','.join(inner)}]")


def run_params(run: Run) -> dict[str, Any]:
    return {
        "id": run.id,
        "agent": run.agent,
        "task": run.task,
        "status": run.status.value,
        "budget": run.budget.model_dump_json(exclude_defaults=True),
        "requested_by": run.requested_by,
        "lineage_id": run.lineage_id,
        "parent_id": run.parent_id,
        "fork_step": run.fork_step,
        "dry_run": run.dry_run,
        "created_at": ts(run.created_at),
        "updated_at": ts(run.updated_at),
        "model": maybe_dumps(run.model),
    }


def run_from_row(row: Row) -> Run:
    return Run(
        id=row["id"],
        agent=row["agent"],
        task=row["task"],
        status=row["status"],
        step=row["step"],
        budget=Budget.model_validate_json(row["budget"]),
        usage=_usage(row),
        stop_reason=row["stop_reason"],
        error=row["error"],
        requested_by=row["requested_by"],
        lineage_id=row["lineage_id"],
        parent_id=row["parent_id"],
        fork_step=row["fork_step"],
        dry_run=bool(row["dry_run"]),
        lease_owner=row["lease_owner"],
        lease_expires_at=dt(row["lease_expires_at"]),
        created_at=dt(row["created_at"]),
        updated_at=dt(row["updated_at"]),
        model=maybe_loads(row["model"]),
    )


def checkpoint_params(cp: Checkpoint) -> dict[str, Any]:
    return {
        "run_id": cp.run_id,
        "seq": cp.seq,
        "step": cp.step,
        "snapshot": cp.snapshot,
        "status": cp.status.value,
        "steps": cp.usage.steps,
        "input_tokens": cp.usage.input_tokens,
        "cached_input_tokens": cp.usage.cached_input_tokens,
        "output_tokens": cp.usage.output_tokens,
        "cost": cp.usage.cost,
        "stop_reason": cp.stop_reason,
        "error": cp.error,
        "created_at": ts(cp.created_at),
        "messages": messages_json(cp.messages),
    }


def checkpoint_from_row(row: Row) -> Checkpoint:
    return Checkpoint(
        run_id=row["run_id"],
        seq=row["seq"],
        step=row["step"],
        snapshot=bool(row["snapshot"]),
        status=row["status"],
        usage=_usage(row),
        stop_reason=row["stop_reason"],
        error=row["error"],
        messages=MESSAGES.validate_json(row["messages"]),
        created_at=dt(row["created_at"]),
        rolled_back=bool(row["rolled_back"]),
    )


def state_from_rows(run_id: str, rows: Sequence[Sequence[Any]]) -> RunState:
    """Rebuild a state from its rows: messages in seq order, its own fields on the last."""
    seq, _, fields = rows[-1]
    state = json.loads(fields)
    return RunState(
        run_id=run_id,
        seq=seq,
        step=state["step"],
        status=state["status"],
        usage=_usage(state),
        stop_reason=state["stop_reason"],
        error=state["error"],
        messages=join_messages(row[1] for row in rows),
    )


def _usage(row: Row) -> Usage:
    return Usage(
        steps=row["steps"],
        input_tokens=row["input_tokens"],
        cached_input_tokens=row["cached_input_tokens"],
        output_tokens=row["output_tokens"],
        cost=row["cost"],
    )


def effect_params(effect: Effect) -> dict[str, Any]:
    return {
        "run_id": effect.run_id,
        "call_id": effect.call_id,
        "lineage_id": effect.lineage_id,
        "step": effect.step,
        "tool": effect.tool,
        "reversibility": effect.reversibility.value,
        "idempotent": effect.idempotent,
        "compensator": effect.compensator,
        "idempotency_key": effect.idempotency_key,
        "approval_id": effect.approval_id,
        "compensates": effect.compensates,
        "started_at": ts(effect.started_at),
        "args": dumps(effect.args),
        "sensitive": dumps(list(effect.sensitive)),
        "args_digest": effect.digest,
        "asked_digest": effect.asked_digest,
    }


def effect_from_row(row: Row) -> Effect:
    return Effect(
        run_id=row["run_id"],
        call_id=row["call_id"],
        lineage_id=row["lineage_id"],
        step=row["step"],
        tool=row["tool"],
        args=json.loads(row["args"]),
        idempotency_key=row["idempotency_key"],
        reversibility=row["reversibility"],
        idempotent=bool(row["idempotent"]),
        compensator=row["compensator"],
        status=row["status"],
        result=maybe_loads(row["result"]),
        error=row["error"],
        approval_id=row["approval_id"],
        compensates=row["compensates"],
        compensated_by=row["compensated_by"],
        started_at=dt(row["started_at"]),
        finished_at=dt(row["finished_at"]),
        sensitive=tuple(json.loads(row["sensitive"])),
        args_digest=row["args_digest"],
        asked_digest=row["asked_digest"],
    )


def outcome_params(outcome: EffectOutcome) -> dict[str, Any]:
    return {
        "run_id": outcome.run_id,
        "call_id": outcome.call_id,
        "status": outcome.status.value,
        "result": maybe_dumps(outcome.result),
        "error": outcome.error,
        "finished_at": ts(outcome.finished_at),
    }


def approval_params(approval: Approval, test_now: float | None = None) -> dict[str, Any]:
    values = approval.model_dump()
    values.update(
        args=dumps(approval.args),
        approved_args=maybe_dumps(approval.approved_args),
        rule=approval.rule.model_dump_json() if approval.rule else None,
        state=approval.state.value,
        delivery=approval.delivery.value,
        callback_status=approval.callback_status and approval.callback_status.value,
        decided_at=ts(approval.decided_at),
        deadline=ts(approval.deadline),
        next_reminder_at=ts(approval.next_reminder_at),
        created_at=ts(approval.created_at),
        sensitive=dumps(list(approval.sensitive)),
        args_digest=approval.shown_digest,
        approved_digest=approval.approved_digest or decided_digest(approval),
        conflict=approval.conflict.model_dump_json() if approval.conflict else None,
        duplicate_args=maybe_dumps(approval.duplicate_args),
        resume_state=approval.resume_state,  # excluded from model_dump, so never logged
        test_now=test_now,
    )
    return values


def decided_digest(approval: Approval) -> str | None:
    """What an approval decided at once (by a rule) approved: its arguments, unedited."""
    if approval.state != ApprovalState.APPROVED:
        return None
    args = approval.args if approval.approved_args is None else approval.approved_args
    return args_digest(args)


def approval_from_row(row: Row) -> Approval:
    values = dict(row)
    values.update(
        args=json.loads(row["args"]),
        approved_args=maybe_loads(row["approved_args"]),
        rule=maybe_loads(row["rule"]),
        conflict=maybe_loads(row["conflict"]),
        duplicate_args=maybe_loads(row["duplicate_args"]),
        escalated=bool(row["escalated"]),
        decided_at=dt(row["decided_at"]),
        deadline=dt(row["deadline"]),
        next_reminder_at=dt(row["next_reminder_at"]),
        created_at=dt(row["created_at"]),
        sensitive=tuple(json.loads(row["sensitive"])),
    )
    return Approval.model_validate(values)


def fact_params(fact: Fact) -> dict[str, Any]:
    return {
        "key": fact.key,
        "value": dumps(fact.value),
        "source": fact.source,
        "updated_at": ts(fact.updated_at),
    }


def fact_from_row(row: Row) -> Fact:
    return Fact(
        key=row["key"],
        value=json.loads(row["value"]),
        source=row["source"],
        updated_at=dt(row["updated_at"]),
    )


def page_params(page: Page) -> dict[str, Any]:
    values = page.model_dump()
    values.update(
        delivery=page.delivery.value,
        acknowledged_at=ts(page.acknowledged_at),
        created_at=ts(page.created_at),
    )
    return values


def page_from_row(row: Row) -> Page:
    values = dict(row)
    values.update(acknowledged_at=dt(row["acknowledged_at"]), created_at=dt(row["created_at"]))
    return Page.model_validate(values)


def outbox_from_row(row: Row) -> OutboxItem:
    values = dict(row)
    values.update(detail=json.loads(row["detail"]), created_at=dt(row["created_at"]))
    return OutboxItem.model_validate(values)


def event_params(event: AuditEvent) -> dict[str, Any]:
    return {
        "at": ts(event.at),
        "actor": event.actor,
        "action": event.action,
        "run_id": event.run_id,
        "approval_id": event.approval_id,
        "detail": dumps(event.detail),
    }


def event_from_row(row: Row) -> AuditEvent:
    return AuditEvent(
        id=row["id"],
        at=dt(row["at"]),
        actor=row["actor"],
        action=row["action"],
        run_id=row["run_id"],
        approval_id=row["approval_id"],
        detail=json.loads(row["detail"]),
    )
