"""Records to column values and back, the same for every SQL dialect.

Times become epoch seconds; structured values become compact JSON text.

Each record has its two functions, to columns and back: most are a `Columns` table's, which
names only the columns stored otherwise than as they are.

Reading takes only the columns a record has fields for, so a row with columns a newer
Signoff added reads as before; a row whose values this Signoff cannot read (a state it does
not know, a column a newer one dropped) is `errors.UnreadableRecord`, never a bare
validation error that a caller could take for its own failure."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from datetime import UTC
from datetime import datetime
from typing import Any
from typing import Generic
from typing import ParamSpec
from typing import TypeVar

from pydantic import ValidationError
from pydantic_core import to_json

from store import errors
from store.digest import args_digest
from store.digest import packed
from store.digest import unpacked
from store.records import MESSAGES
from store.records import Approval
from store.records import ApprovalState
from store.records import AuditAnchor
from store.records import AuditEvent
from store.records import Budget
from store.records import Checkpoint
from store.records import Effect
from store.records import EffectOutcome
from store.records import EffectReuse
from store.records import Fact
from store.records import Message
from store.records import OutboxItem
from store.records import Page
from store.records import Passkey
from store.records import Record
from store.records import Run
from store.records import RunState
from store.records import Usage
from store.records import Worker

Row = Mapping[str, Any]
R = TypeVar("R", bound=Record)
P = ParamSpec("P")
T = TypeVar("T")

Clock = Callable[[], datetime]


def judge_now(clock: Clock | None) -> float | None:
    """The `:test_now` parameter of the queries that judge a deadline: None (the SQL then
    reads the database's own `now()`) unless the store was opened with a clock of its own."""
    return None if clock is None else ts(clock())


def ts(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def dt(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def _value(member: Any) -> Any:
    return member.value


def utc(value: float) -> datetime:
    return datetime.fromtimestamp(value, UTC)


def decoder(what: str) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """Turn a reader's failure to read a stored `what` into `UnreadableRecord`, saying which
    fields failed and how, never their values (they may hold a tool's arguments)."""

    def wrap(read: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(read)
        def checked(*args: P.args, **kwargs: P.kwargs) -> T:
            try:
                return read(*args, **kwargs)
            except (ValueError, KeyError) as exc:
                raise unreadable(what, exc) from exc

        return checked

    return wrap


def unreadable(what: str, exc: Exception) -> errors.UnreadableRecord:
    return errors.UnreadableRecord(
        f"a stored {what} this Signoff cannot read (a newer Signoff may have written it): "
        f"{_why(exc)}",
        record=what,
    )


def _why(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['type']}" for e in exc.errors())
    if isinstance(exc, KeyError):
        return f"no column {exc}"
    return type(exc).__name__


def known_fields(record: type[Record], row: Row) -> dict[str, Any]:
    """The row's columns the record has fields for: one a newer Signoff added is left out."""
    fields = _field_names(record)
    return {name: value for name, value in dict(row).items() if name in fields}


@functools.cache
def _field_names(record: type[Record]) -> frozenset[str]:
    """Asked once per record type: `model_fields` builds its answer on each access."""
    return frozenset(record.model_fields)


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
class Columns(Generic[R]):
    """A record's columns, both ways: each field in the column of its name, as it is
    (`plain`), as epoch seconds (`times`), as 0/1 read back as a bool (`flags`), as its enum's
    value (`enums`), as JSON text (`json`, where None is JSON's null; `json_or_null`, where
    it is NULL), or as a digest's raw bytes, read back as `sha256:<hex>` (`digests`).
    `unwritten`: columns read back but not written with the record (a later write or the
    database fills them). A field not held as one column is given to the call."""

    record: type[R]
    plain: tuple[str, ...] = ()
    times: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    enums: tuple[str, ...] = ()
    json: tuple[str, ...] = ()
    json_or_null: tuple[str, ...] = ()
    digests: tuple[str, ...] = ()
    unwritten: frozenset[str] = frozenset()
    write: Callable[[R], dict[str, Any]] = field(init=False, repr=False, compare=False)
    """The record's written columns, each converted, made once (`_compiled`): a step
    converts a checkpoint and an effect, and building these per call was a fifth of a read
    step's Python (issue 46's profile). `params` without fields given, one call less."""

    def __post_init__(self) -> None:
        kinds: list[tuple[tuple[str, ...], Callable[[Any], Any] | None]] = [
            (self.plain + self.flags, None),
            (self.enums, _value),
            (self.times, ts),
            (self.json, dumps),
            (self.json_or_null, maybe_dumps),
            (self.digests, packed),
        ]
        writers = tuple(
            (name, convert)
            for names, convert in kinds
            for name in names
            if name not in self.unwritten
        )
        object.__setattr__(self, "write", _compiled(writers))

    def read(self, row: Row, **given: Any) -> R:
        try:
            values = {name: row[name] for name in self.plain + self.enums}
            values.update((name, dt(row[name])) for name in self.times)
            values.update((name, bool(row[name])) for name in self.flags)
            values.update((name, maybe_loads(row[name])) for name in self.json + self.json_or_null)
            values.update((name, unpacked(row[name])) for name in self.digests)
            if given:  # a field held otherwise than in its column wins over the column
                values.update(given)
            return self.record(**values)
        except (ValueError, KeyError) as exc:
            raise unreadable(self.record.__name__, exc) from exc

    def params(self, record: R, **given: Any) -> dict[str, Any]:
        values = self.write(record)
        if given:
            values.update(given)
        return values


def _compiled(
    writers: Sequence[tuple[str, Callable[[Any], Any] | None]],
) -> Callable[[Any], dict[str, Any]]:
    """One function that reads a record's written columns as a dict literal, as one would
    write it by hand: a step converts a checkpoint and an effect, and a loop over the
    columns (a `getattr` and a call each) was most of a read step's record-to-row Python.
    The names are a model's field names, so they are identifiers."""
    scope: dict[str, Any] = {}
    items = []
    for number, (name, convert) in enumerate(writers):
        if not name.isidentifier():
            raise ValueError(f"not a field name: {name!r}")
        if convert is None:
            items.append(f"{name!r}: r.{name}")
        elif convert is _value:
            items.append(f"{name!r}: r.{name}.value")
        else:
            scope[f"convert{number}"] = convert
            items.append(f"{name!r}: convert{number}(r.{name})")
    exec(f"def params(r):\n    return {{{', '.join(items)}}}", scope)
    return scope["params"]  # type: ignore[no-any-return]


_USAGE = Columns(Usage, ("steps", "input_tokens", "cached_input_tokens", "output_tokens", "cost"))
_usage = _USAGE.read

_RUN = Columns(
    Run,
    (
        "id",
        "agent",
        "task",
        "step",
        "stop_reason",
        "error",
        "requested_by",
        "lineage_id",
        "parent_id",
        "fork_step",
        "lease_owner",
    ),
    times=("created_at", "updated_at", "lease_expires_at"),
    flags=("dry_run",),
    enums=("status",),
    json_or_null=("model",),
    unwritten=frozenset({"step", "stop_reason", "error", "lease_owner", "lease_expires_at"}),
)
"""A run's row; its step, usage, stop reason and error are its latest checkpoint's."""


def run_params(run: Run) -> dict[str, Any]:
    return _RUN.params(run, budget=run.budget.model_dump_json(exclude_defaults=True))


@decoder("Run")
def run_from_row(row: Row) -> Run:
    return _RUN.read(row, budget=Budget.model_validate_json(row["budget"]), usage=_usage(row))


_CHECKPOINT = Columns(
    Checkpoint,
    ("run_id", "seq", "step", "stop_reason", "error"),
    times=("created_at",),
    flags=("snapshot", "rolled_back"),
    enums=("status",),
    unwritten=frozenset({"rolled_back"}),
)


def checkpoint_params(cp: Checkpoint) -> dict[str, Any]:
    values = _CHECKPOINT.write(cp)
    values.update(_USAGE.write(cp.usage))
    values["messages"] = messages_json(cp.messages)
    return values


@decoder("Checkpoint")
def checkpoint_from_row(row: Row) -> Checkpoint:
    messages = MESSAGES.validate_json(row["messages"])
    return _CHECKPOINT.read(row, usage=_usage(row), messages=messages)


@decoder("RunState")
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


_EFFECT = Columns(
    Effect,
    (
        "run_id",
        "call_id",
        "lineage_id",
        "step",
        "tool",
        "compensator",
        "idempotency_key",
        "approval_id",
        "compensates",
        "compensated_by",
        "error",
    ),
    times=("started_at", "finished_at"),
    flags=("idempotent",),
    enums=("reversibility", "status"),
    json=("args", "sensitive", "result"),
    digests=("args_digest", "asked_digest"),
    unwritten=frozenset(
        {"status", "result", "error", "compensated_by", "finished_at"}
        | {"args_digest", "asked_digest"}  # written by `effect_params`
    ),
)
"""An effect's row; how it ended is written when it does (`outcome_params`). Its digests are
32 raw bytes each; `asked_digest` is NULL unless an edit made it differ from `args_digest`."""


def effect_params(effect: Effect) -> dict[str, Any]:
    digest = effect.digest
    asked = None if effect.asked_digest == digest else effect.asked_digest
    values = _EFFECT.write(effect)
    values["args_digest"], values["asked_digest"] = packed(digest), packed(asked)
    return values


effect_from_row = _EFFECT.read


outcome_params = Columns(
    EffectOutcome,
    ("run_id", "call_id", "error"),
    times=("finished_at",),
    enums=("status",),
    json_or_null=("result",),
).write


def approval_params(approval: Approval, test_now: float | None = None) -> dict[str, Any]:
    values = approval.model_dump()
    values.update(
        args=dumps(approval.args),
        approved_args=maybe_dumps(approval.approved_args),
        rule=approval.rule.model_dump_json() if approval.rule else None,
        authority=approval.authority.model_dump_json() if approval.authority else None,
        state=approval.state.value,
        delivery=approval.delivery.value,
        callback_status=approval.callback_status and approval.callback_status.value,
        decided_at=ts(approval.decided_at),
        deadline=ts(approval.deadline),
        next_reminder_at=ts(approval.next_reminder_at),
        created_at=ts(approval.created_at),
        waiter_until=ts(approval.waiter_until),
        waiter_left_at=ts(approval.waiter_left_at),
        cool_off_until=ts(approval.cool_off_until),
        undo_until=ts(approval.undo_until),
        undone_at=ts(approval.undone_at),
        sensitive=dumps(list(approval.sensitive)),
        args_digest=approval.shown_digest,
        approved_digest=approval.approved_digest or decided_digest(approval),
        conflict=approval.conflict.model_dump_json() if approval.conflict else None,
        duplicate_args=maybe_dumps(approval.duplicate_args),
        receipt=maybe_dumps(approval.receipt),
        context=maybe_dumps(approval.context),
        reasked=maybe_dumps(approval.reasked),
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


@decoder("Approval")
def approval_from_row(row: Row) -> Approval:
    values = known_fields(Approval, row)
    values.update(
        args=json.loads(row["args"]),
        approved_args=maybe_loads(row["approved_args"]),
        rule=maybe_loads(row["rule"]),
        authority=maybe_loads(row["authority"]),
        conflict=maybe_loads(row["conflict"]),
        duplicate_args=maybe_loads(row["duplicate_args"]),
        receipt=maybe_loads(row["receipt"]),
        context=maybe_loads(row["context"]),
        reasked=maybe_loads(row["reasked"]),
        escalated=bool(row["escalated"]),
        decided_at=dt(row["decided_at"]),
        deadline=dt(row["deadline"]),
        next_reminder_at=dt(row["next_reminder_at"]),
        created_at=dt(row["created_at"]),
        waiter_until=dt(row["waiter_until"]),
        waiter_left_at=dt(row["waiter_left_at"]),
        cool_off_until=dt(row["cool_off_until"]),
        undo_until=dt(row["undo_until"]),
        undone_at=dt(row["undone_at"]),
        sensitive=tuple(json.loads(row["sensitive"])),
    )
    return Approval.model_validate(values)


_FACT = Columns(Fact, ("key", "source"), times=("updated_at",), json=("value",))
fact_params, fact_from_row = _FACT.params, _FACT.read


def page_params(page: Page) -> dict[str, Any]:
    values = page.model_dump()
    values.update(
        delivery=page.delivery.value,
        acknowledged_at=ts(page.acknowledged_at),
        created_at=ts(page.created_at),
    )
    return values


@decoder("Page")
def page_from_row(row: Row) -> Page:
    values = known_fields(Page, row)
    values.update(acknowledged_at=dt(row["acknowledged_at"]), created_at=dt(row["created_at"]))
    return Page.model_validate(values)


@decoder("OutboxItem")
def outbox_from_row(row: Row) -> OutboxItem:
    values = known_fields(OutboxItem, row)
    values.update(detail=json.loads(row["detail"]), created_at=dt(row["created_at"]))
    return OutboxItem.model_validate(values)


_EVENT = Columns(
    AuditEvent,
    ("id", "actor", "action", "run_id", "approval_id", "prev_hash", "hash"),
    times=("at",),
    json=("detail",),
    unwritten=frozenset({"id", "prev_hash", "hash"}),
)
"""An audit event's row; its id is the database's."""
event_params, event_from_row = _EVENT.params, _EVENT.read

anchor_from_row = Columns(
    AuditAnchor, ("seq", "kind", "hash"), times=("at",), json_or_null=("signed",)
).read

_REUSE = Columns(
    EffectReuse,
    ("run_id", "call_id", "from_run_id", "from_call_id", "tool", "idempotency_key"),
    times=("at", "undone_at"),
    unwritten=frozenset({"undone_at"}),
)
reuse_params = _REUSE.params
reuse_from_row = _REUSE.read

_WORKER = Columns(Worker, ("id", "config_digest"), times=("started_at", "seen_at"))
worker_from_row = _WORKER.read

_PASSKEY = Columns(Passkey, ("id", "person", "public_key", "sign_count"), times=("created_at",))
passkey_params = _PASSKEY.params
passkey_from_row = _PASSKEY.read
