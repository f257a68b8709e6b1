"""The durable records: immutable pydantic models, one per table.

Timestamps are timezone-aware UTC datetimes; the backends store them as epoch seconds.

One job, the records; long because there is one model per table, each with its fields said."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from store.limits import ID_PATTERN as ID_PATTERN  # ids chosen by clients; the limits live there

SYSTEM_ACTOR = "signoff"
"""Who Signoff itself is in decisions and audit events (expiries, withdrawals)."""


def utcnow() -> datetime:
    return datetime.now(UTC)


class RunStatus(StrEnum):
    RUNNING = "running"
    WAITING_APPROVAL = "waiting_approval"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


TERMINAL_STATUSES = frozenset({RunStatus.DONE, RunStatus.FAILED, RunStatus.CANCELLED})


class EffectStatus(StrEnum):
    STARTED = "started"
    COMPLETED = "completed"
    FAILED = "failed"
    IN_DOUBT = "in_doubt"


class Reversibility(StrEnum):
    READ = "read"
    REVERSIBLE = "reversible"
    IRREVERSIBLE = "irreversible"


class ApprovalState(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    DECLINED = "declined"


class Delivery(StrEnum):
    """Whether the human-facing message (Slack post, callback) went out."""

    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"


SENSITIVE_MASK = "[sensitive]"


def masked(args: dict[str, Any], sensitive: Sequence[str]) -> dict[str, Any]:
    """`args` with the value of each argument named in `sensitive` replaced by the mask."""
    if not sensitive:
        return args
    return {name: SENSITIVE_MASK if name in sensitive else value for name, value in args.items()}


class Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ToolCall(Record):
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class Message(Record):
    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None


MESSAGES = TypeAdapter(tuple[Message, ...])


class Usage(Record):
    steps: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return self.plus(other)

    def plus(self, other: Usage, *, steps: int = 0) -> Usage:
        """This usage and `other`'s, and `steps` more steps, in one record."""
        return Usage(
            steps=self.steps + other.steps + steps,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cost=round(self.cost + other.cost, 10),
        )


class Budget(Record):
    """Limits on a run's total usage; None means unlimited."""

    max_steps: int | None = Field(default=None, ge=0)
    max_input_tokens: int | None = Field(default=None, ge=0)
    max_output_tokens: int | None = Field(default=None, ge=0)
    max_cost: float | None = Field(default=None, ge=0)


class Run(Record):
    id: str
    agent: str
    task: str
    status: RunStatus = RunStatus.RUNNING
    step: int = 0
    budget: Budget = Budget()
    usage: Usage = Usage()
    stop_reason: str | None = None
    error: str | None = None
    requested_by: str | None = None
    lineage_id: str
    parent_id: str | None = None
    fork_step: int | None = None
    dry_run: bool = False
    lease_owner: str | None = None
    lease_expires_at: datetime | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class Checkpoint(Record):
    """One append to a run's history.

    `messages` holds what was appended since the previous checkpoint; in a snapshot it holds
    the whole transcript (the first checkpoint of a run, a fork, a rollback).
    """

    run_id: str
    seq: int = Field(ge=0)
    step: int = Field(ge=0)
    snapshot: bool = False
    status: RunStatus
    usage: Usage = Usage()
    stop_reason: str | None = None
    error: str | None = None
    messages: tuple[Message, ...] = ()
    created_at: datetime = Field(default_factory=utcnow)
    rolled_back: bool = False
    """Set when read back, never written: a later rollback went back before this
    checkpoint's step, so it is off the run's current timeline (kept, for the record)."""


class RunState(Record):
    """A run's state as of one checkpoint, rebuilt from the history."""

    run_id: str
    seq: int
    step: int
    status: RunStatus
    usage: Usage
    stop_reason: str | None = None
    error: str | None = None
    messages: tuple[Message, ...] = ()

    @property
    def pending_calls(self) -> tuple[ToolCall, ...]:
        """The open decision: the last assistant turn's tool calls that have no result yet."""
        return pending_calls(self.messages)


def pending_calls(messages: Sequence[Message]) -> tuple[ToolCall, ...]:
    answered: set[str] = set()
    for message in reversed(messages):
        if message.role == "tool" and message.tool_call_id:
            answered.add(message.tool_call_id)
        elif message.role == "assistant":
            return tuple(c for c in message.tool_calls if c.id not in answered)
    return ()


class Effect(Record):
    """One tool execution in the ledger. `started` is written before the tool runs."""

    run_id: str
    call_id: str
    lineage_id: str
    step: int
    tool: str
    args: dict[str, Any]
    idempotency_key: str
    reversibility: Reversibility
    idempotent: bool = False
    """The tool may run again under the same key: an in-doubt effect is retried, not paged."""
    compensator: str | None = None
    status: EffectStatus = EffectStatus.STARTED
    result: Any = None
    error: str | None = None
    approval_id: str | None = None
    compensates: str | None = None
    compensated_by: str | None = None
    started_at: datetime = Field(default_factory=utcnow)
    finished_at: datetime | None = None
    sensitive: tuple[str, ...] = ()
    """Arguments the tool marks sensitive: masked wherever the effect is shown."""

    @property
    def shown_args(self) -> dict[str, Any]:
        return masked(self.args, self.sensitive)

    def shown(self) -> Effect:
        """The effect as people and logs may see it (sensitive arguments masked)."""
        return self.model_copy(update={"args": self.shown_args}) if self.sensitive else self


class EffectOutcome(Record):
    """How a started effect ended."""

    run_id: str
    call_id: str
    status: Literal[EffectStatus.COMPLETED, EffectStatus.FAILED, EffectStatus.IN_DOUBT]
    result: Any = None
    error: str | None = None
    finished_at: datetime = Field(default_factory=utcnow)


class RuleMatch(Record):
    """Which approval rule an approval was created under, and the policy that rule chose, so
    a later change to the rules never changes who decides it. `kind`: `matched` (rule
    `number` held), `no_match` (the tool's policy), `error` (rule `number` failed while it ran:
    the most restrictive policy was asked)."""

    kind: Literal["matched", "no_match", "error"]
    action: Literal["ask", "auto_approve", "deny"] = "ask"
    number: int | None = None
    when: str | None = None
    label: str | None = None
    deny: str | None = None
    error: str | None = None
    summary: str
    """What every surface shows: "rule 3: amount over $200 → 2 approvals from S0LEADS"."""
    policy: dict[str, Any] = Field(default_factory=dict)


class Approval(Record):
    id: str
    tool: str
    args: dict[str, Any]
    policy: str = "default"
    state: ApprovalState = ApprovalState.PENDING
    run_id: str | None = None
    call_id: str | None = None
    lineage_id: str | None = None
    idempotency_key: str | None = None
    approved_args: dict[str, Any] | None = None
    decided_by: str | None = None
    decided_at: datetime | None = None
    reason: str | None = None
    requested_by: str | None = None
    required_approvals: int = Field(default=1, ge=1)
    deadline: datetime | None = None
    next_reminder_at: datetime | None = None
    reminders_sent: int = 0
    escalated: bool = False
    channel: str | None = None
    message_ts: str | None = None
    delivery: Delivery = Delivery.PENDING
    callback_url: str | None = None
    callback_status: Delivery | None = None
    duplicate_of: str | None = None
    """Another run that asked for the same effect (same idempotency key, another lineage),
    pending or recently approved when this approval was created: a possible duplicate."""
    rule: RuleMatch | None = None
    created_at: datetime = Field(default_factory=utcnow)
    sensitive: tuple[str, ...] = ()
    """Arguments the tool marks sensitive: masked on every surface, whole for the tool."""
    resume_state: str | None = Field(None, exclude=True, repr=False)
    """What the agent that asked needs to resume once this is decided (opaque text, e.g. the
    OpenAI Agents SDK's paused `RunState`): left out of every dump and repr (logs, audit,
    Slack), answered only to API clients reading the approval."""

    @property
    def shown_args(self) -> dict[str, Any]:
        """The arguments as people and logs may see them (sensitive ones masked)."""
        return masked(self.args, self.sensitive)

    @property
    def shown_approved_args(self) -> dict[str, Any] | None:
        return None if self.approved_args is None else masked(self.approved_args, self.sensitive)

    def shown(self) -> Approval:
        """The approval as people and logs may see it (sensitive arguments masked)."""
        if not self.sensitive:
            return self
        update = {"args": self.shown_args, "approved_args": self.shown_approved_args}
        return self.model_copy(update=update)

    @property
    def withdrawn(self) -> bool:
        """Declined by Signoff because its run stopped waiting (cancelled, rolled back): not
        a person's "no", so the call may be asked again."""
        return (
            self.state == ApprovalState.DECLINED
            and self.decided_by == SYSTEM_ACTOR
            and (self.reason or "").startswith("withdrawn:")
        )


class Fact(Record):
    key: str = Field(min_length=1)
    value: Any
    source: str
    updated_at: datetime = Field(default_factory=utcnow)


FACTS = TypeAdapter(list[Fact])


class Page(Record):
    """An effect a human must handle: no compensator, in doubt, or a failed compensation."""

    id: str
    reason: str
    run_id: str | None = None
    call_id: str | None = None
    tool: str | None = None
    detail: str = ""
    channel: str | None = None
    message_ts: str | None = None
    delivery: Delivery = Delivery.PENDING
    acknowledged_by: str | None = None
    acknowledged_at: datetime | None = None
    created_at: datetime = Field(default_factory=utcnow)


class OutboxItem(Record):
    """A notification to deliver: a change to `subject_id` (an approval, page or run id)."""

    id: int
    topic: Literal[
        "approval_requested",
        "approval_decided",
        "approval_voted",
        "approval_reminded",
        "page_opened",
        "page_reminded",
        "page_acknowledged",
        "run_finished",
    ]
    subject_id: str
    detail: dict[str, Any] = Field(default_factory=dict)
    attempts: int = 0
    created_at: datetime = Field(default_factory=utcnow)


class AuditEvent(Record):
    action: str
    actor: str
    run_id: str | None = None
    approval_id: str | None = None
    detail: dict[str, Any] = Field(default_factory=dict)
    at: datetime = Field(default_factory=utcnow)
    id: int | None = None
