"""Records to column values and back, the same for every SQL dialect.

Times become epoch seconds; structured values become compact JSON text.

Each record has its two short functions, to columns and back; a record read as its columns
are, but for the conversions its `Decoder` names, is read by that table."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

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
    Record,
    Run,
    RunState,
    Usage,
)

Row = Mapping[str, Any]
R = TypeVar("R", bound=Record)

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


@dataclass(frozen=True, slots=True)
class Decoder(Generic[R]):
    """How a record is read from its row: each field from the column of its name, as it is
    (`plain`), from epoch seconds (`times`), from 0/1 (`flags`) or from JSON text (`json`;
    NULL stays None). A field a row does not hold as one column is given to the call."""

    record: type[R]
    plain: tuple[str, ...]
    times: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    json: tuple[str, ...] = ()

    def __call__(self, row: Row, **given: Any) -> R:
        values = {name: row[name] for name in self.plain}
        values.update((name, dt(row[name])) for name in self.times)
        values.update((name, bool(row[name])) for name in self.flags)
        values.update((name, maybe_loads(row[name])) for name in self.json)
        return self.record(**values, **given)


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


_RUN = Decoder(
    Run,
    (
        "id",
        "agent",
        "task",
        "status",
        "step",
        "stop_reason",
        "error",
        "requested_by",
        "lineage_id",
        "parent_id",
        "fork_step",
        "lease_owner",
    ),
    times=("lease_expires_at", "created_at", "updated_at"),
    flags=("dry_run",),
    json=("model",),
)


def run_from_row(row: Row) -> Run:
    return _RUN(row, budget=Budget.model_validate_json(row["budget"]), usage=_usage(row))


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


_CHECKPOINT = Decoder(
    Checkpoint,
    ("run_id", "seq", "step", "status", "stop_reason", "error"),
    times=("created_at",),
    flags=("snapshot", "rolled_back"),
)


def checkpoint_from_row(row: Row) -> Checkpoint:
    return _CHECKPOINT(row, usage=_usage(row), messages=MESSAGES.validate_json(row["messages"]))


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


_usage = Decoder(Usage, ("steps", "input_tokens", "cached_input_tokens", "output_tokens", "cost"))


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


effect_from_row = Decoder(
    Effect,
    (
        "run_id",
        "call_id",
        "lineage_id",
        "step",
        "tool",
        "idempotency_key",
        "reversibility",
        "compensator",
        "status",
        "error",
        "approval_id",
        "compensates",
        "compensated_by",
        "args_digest",
        "asked_digest",
    ),
    times=("started_at", "finished_at"),
    flags=("idempotent",),
    json=("args", "result", "sensitive"),
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


fact_from_row = Decoder(Fact, ("key", "source"), times=("updated_at",), json=("value",))


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


event_from_row = Decoder(
    AuditEvent,
    ("id", "actor", "action", "run_id", "approval_id"),
    times=("at",),
    json=("detail",),
)
