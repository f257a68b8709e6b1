"""One job, long because each table has its model: the durable records.

The durable records: immutable pydantic models, one per table.

Timestamps are timezone-aware UTC datetimes; the backends store them as epoch seconds.

One model per table, each with its fields said.

Each model's validator is built when it is first used (`defer_build`), and the annotations
are objects rather than strings pydantic would evaluate: a process builds the models it
uses, not all of them, so a CLI read starts sooner (docs/benchmarks.md, issue 44.1). A method
that names its own class quotes it."""

from collections.abc import Iterable
from collections.abc import Sequence
from datetime import UTC
from datetime import datetime
from enum import StrEnum
from typing import Any
from typing import Literal

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import TypeAdapter
from pydantic import model_validator

from store.digest import args_digest
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


def _with_digest(data: Any) -> Any:
    """A record's fields with `args_digest` filled in from `args` where it is missing."""
    if isinstance(data, dict) and data.get("args_digest") is None and "args" in data:
        return {**data, "args_digest": args_digest(data["args"])}
    return data


class Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


DEFERRED = ConfigDict(defer_build=True)
"""A module-level adapter's: built on first use, like the models."""


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


MESSAGES = TypeAdapter(tuple[Message, ...], config=DEFERRED)


class Usage(Record):
    steps: int = 0
    input_tokens: int = 0
    """Every prompt token, however the provider billed it: what an input budget limits."""
    output_tokens: int = 0
    cost: float = 0.0
    cached_input_tokens: int = 0
    """Of `input_tokens`, those the provider read from its prompt cache (billed at its cached
    rate, which `cost` already used)."""

    def __add__(self, other: "Usage") -> "Usage":
        return self.plus(other)

    def plus(self, other: "Usage", *, steps: int = 0) -> "Usage":
        """This usage and `other`'s, and `steps` more steps, in one record."""
        return Usage(
            steps=self.steps + other.steps + steps,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
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
    model: dict[str, Any] | None = None
    """The model and its settings the run started on: it resumes on the same, or refuses."""
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

    @classmethod
    def opening(
        cls,
        run_id: str,
        messages: Iterable[Message],
        *,
        status: RunStatus = RunStatus.RUNNING,
        created_at: datetime | None = None,
    ) -> "Checkpoint":
        """A run's first checkpoint: a snapshot of its opening transcript at seq 0, step 0."""
        return cls(
            run_id=run_id,
            seq=0,
            step=0,
            snapshot=True,
            status=status,
            messages=tuple(messages),
            created_at=created_at or utcnow(),
        )


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
    args_digest: str | None = None
    """The digest of the canonical `args` the effect runs with: computed from them when not
    given (a new effect, a row written before digests were kept)."""

    asked_digest: str | None = None
    """Of the arguments proposed, when an approver edited them before it ran: a call that
    repeats that proposal in the lineage is this effect again (the person decided it)."""

    _digested = model_validator(mode="before")(lambda data: _with_digest(data))

    @property
    def digest(self) -> str:
        return self.args_digest or args_digest(self.args)

    def repeated_by(self, digest: str) -> bool:
        """A call with arguments of this digest, under this effect's key, is this effect."""
        return digest in (self.digest, self.asked_digest)

    @property
    def shown_args(self) -> dict[str, Any]:
        return masked(self.args, self.sensitive)

    def shown(self) -> "Effect":
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


class SpendWindow(Record):
    """How a limit's window counts: a sliding length (`seconds`) in buckets `width` seconds
    wide, or the calendar day in `timezone` (`seconds` None). `store.spend` does the sums."""

    seconds: int | None = None
    width: int = 0
    timezone: str | None = None


class LimitState(Record):
    """One limit as it stood for one call, when the approval was made: its key, this call's
    amount, what the window had used before it, and what followed (`within` the limit,
    `over` it, or `error`: the key or amount could not be worked out, so it asks)."""

    name: str
    mode: Literal["enforce", "shadow"] = "enforce"
    window: SpendWindow
    key: str | None = None
    amount: int = 0
    max: int
    used: int = 0
    """The window's total before this call."""
    calls: int = 0
    """The window's calls before this call."""
    outcome: Literal["within", "over", "error"] = "within"
    over: Literal["ask", "deny"] = "ask"
    held: bool = False
    """Whether this call holds its amount (a call past the limit takes it once approved)."""
    error: str | None = None
    money: str | None = None
    """The currency the amounts are cents of (`USD`), to show them as money."""
    each: str | None = None
    """What the key names (`customer`), to say "for this customer"."""

    @property
    def counter(self) -> str:
        """The counter it reads and holds: the limit's name with its window's shape."""
        window = self.window
        if window.seconds is None:
            return f"{self.name}@day:{window.timezone or 'UTC'}"
        return f"{self.name}@{window.seconds}s/{window.width}"

    @property
    def after(self) -> int:
        return self.used + self.amount

    @property
    def left(self) -> int:
        return self.max - self.after


class ShadowNote(Record):
    """What a rule, limit or envelope in shadow mode would have done to a call (it decided
    nothing): `would` is `approve`, `ask` or `deny`."""

    kind: Literal["rule", "limit", "envelope"]
    name: str
    would: Literal["approve", "ask", "deny"]
    text: str


class RuleMatch(Record):
    """Which approval rule an approval was created under, and the policy that rule chose, so
    a later change to the rules never changes who decides it. `kind`: `matched` (rule
    `number` held), `no_match` (the tool's policy), `error` (rule `number` failed while it ran:
    the most restrictive policy was asked). `limits`: the limits the call was counted
    against; `limit` names the one that made it ask or declined it, when one did."""

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
    learned_id: str | None = None
    """The learned rule (`LearnedRule.id`) that approved it, when one did."""
    limits: tuple[LimitState, ...] = ()
    limit: str | None = None
    envelope_id: str | None = None
    """The envelope (`Envelope.id`) that approved it, when one did."""
    shadow: tuple[ShadowNote, ...] = ()
    """What rules, limits and envelopes in shadow mode would have done (they decide nothing)."""


class Authority(Record):
    """Who decides an approval, and how, fixed when it was asked (docs/architecture.md,
    "Authority"): every decision, by any process and through any door, is judged against
    this, never against the deciding process's own configuration. User groups among the
    approvers are resolved when someone decides."""

    policy: str
    """The policy's name: a tool's, or `default`."""
    rule: str | None = None
    """The rule that chose the settings ("rule 3: over $200"), when one did."""
    settings: dict[str, Any] = Field(default_factory=dict)
    """The policy as it was asked under: approvers (people and user groups), the quorum,
    self-approval, edits, timeout and what happens then, reminders and escalation; durations
    in seconds."""
    digest: str
    """Of the settings' canonical text: the same policy asked twice has the same digest."""
    config_digest: str | None = None
    """The configuration digest of the process that asked (`signoff doctor` lists them)."""
    filled: bool = False
    """Filled in after an upgrade from the policy in force then: the approval was asked
    before approvals carried their authority."""

    @classmethod
    def of(
        cls,
        policy: str,
        settings: dict[str, Any],
        *,
        rule: str | None = None,
        config_digest: str | None = None,
        filled: bool = False,
    ) -> "Authority":
        return cls(
            policy=policy,
            rule=rule,
            settings=settings,
            digest=args_digest(settings),
            config_digest=config_digest,
            filled=filled,
        )


class Away(Record):
    """A person away until a time, and who decides for them meanwhile (their delegate)."""

    person: str
    until: datetime
    delegate: str
    set_at: datetime


class Worker(Record):
    """A `signoff serve` process as it told the others: its id, the digest of the
    configuration it decides new approvals by, when it started and when it last said so."""

    id: str
    config_digest: str
    started_at: datetime
    seen_at: datetime


class Passkey(Record):
    """A WebAuthn credential a person registered for step-up (`public_key`: COSE, base64url)."""

    id: str
    person: str
    public_key: str
    sign_count: int
    created_at: datetime


class EffectConflict(Record):
    """An effect made under the key an approval asks for, with other arguments: running the
    call under that key would not do what the approver sees. Shown on the approval's card."""

    run_id: str
    call_id: str
    tool: str
    status: EffectStatus
    args: dict[str, Any]
    """As people may see them (sensitive arguments masked)."""
    digest: str
    approval_id: str | None = None
    approved_by: str | None = None
    approved_at: datetime | None = None


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
    decided_for: str | None = None
    """The person a delegate decided for while they were away (`decided_by` is the delegate)."""
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
    duplicate_args: dict[str, Any] | None = None
    """What the possible duplicate asked (sensitive arguments masked), so every surface can
    say what differs between the two requests."""
    rule: RuleMatch | None = None
    authority: Authority | None = None
    """Who decides it and how, recorded when it was asked (None: asked before approvals
    carried it, and not filled in yet)."""
    created_at: datetime = Field(default_factory=utcnow)
    sensitive: tuple[str, ...] = ()
    """Arguments the tool marks sensitive: masked on every surface, whole for the tool."""
    args_digest: str | None = None
    """The digest of the arguments shown to the approver (`args`): computed from them when
    not given."""
    approved_digest: str | None = None
    """The digest of the arguments approved (`approved_args`, or `args` unedited): the only
    call the runtime executes under this approval."""
    key_suffix: str | None = None
    """Set when a person approved the call as a separate effect from `conflict`: the call
    runs under its key with this suffix, so the outside system sees a new request."""
    conflict: EffectConflict | None = None
    """An effect already made under this key with other arguments, when the approval was
    created: plain approval would replay it, so the approver declines or approves as separate."""
    requester_token: str | None = None
    """The API token that asked for it (`token:<name>`), when one did: only it may withdraw
    the request."""
    waiter_until: datetime | None = None
    """Someone waits for the answer until then: the heartbeat of a long poll or an event
    stream on it, moved on by each. None: nobody's wait is live."""
    waiter_left_at: datetime | None = None
    """When the last waiter's heartbeat lapsed with the approval pending: nobody is waiting
    for this answer now (cleared when someone waits again)."""

    _digested = model_validator(mode="before")(lambda data: _with_digest(data))

    @property
    def shown_digest(self) -> str:
        return self.args_digest or args_digest(self.args)

    @property
    def edited(self) -> bool:
        """The approver changed the arguments: what runs is not what was proposed."""
        return self.approved_args is not None and args_digest(self.approved_args) != (
            self.shown_digest
        )

    receipt: dict[str, Any] | None = None
    """The signed receipt of the decision (`runtime.approvals.receipts`), once signed."""
    context: dict[str, Any] | None = None
    """The facts the tool's context function read when this was asked (shown with it)."""
    context_error: str | None = None
    """Why the context could not be read ("context unavailable: ..." on every surface)."""
    context_digest: str | None = None
    """The digest of `context`: the facts approved, read again before the call runs."""
    agent_reason: str | None = None
    """The agent's stated reason: the text of the model's turn that made the call, shortened."""
    reasked: dict[str, Any] | None = None
    question: str | None = None
    """An approver's question back to the agent instead of a decision (stored declined):
    the agent reads it as the tool's result, and its next call is asked again."""
    """Set on an approval asked again for a call already approved: `approval_id` (the one
    it replaces), `why` (`facts_changed` or `lapsed`) and `text` (what changed)."""
    cool_off: Literal["waiting", "ran", "cancelled"] | None = None
    """Where an approved call of a policy with `cool_off` or `undo_for` is (issue 42.6):
    `waiting` out its cool-off until `cool_off_until`, `ran` (claimed to run), or
    `cancelled` by `cool_off_by` (it never runs). None: no cool-off, or not reached yet."""
    cool_off_until: datetime | None = None
    cool_off_by: str | None = None
    undo_seconds: float | None = None
    """How long the call may be undone once its effect completed (the policy's `undo_for`,
    kept when the call is claimed to run)."""
    ran_outcome: Literal["completed", "failed", "in_doubt"] | None = None
    """How the effect of the call that ran ended, recorded with its result (None: running,
    or it made none). Only a completed one opens the undo window."""
    undo_until: datetime | None = None
    """Until when the call that ran may be undone through its compensator (None: never, or
    not yet: the window opens when its effect completed)."""
    undoing_by: str | None = None
    """Who is undoing the call right now: claimed, its compensation not ended yet."""
    undo_error: str | None = None
    """Why the last undo failed (its compensation raised or ended in doubt; on-call was
    paged): the call is not undone, and an approver may try again within the window."""
    undone_by: str | None = None
    """Who undid the call that ran (once its compensation completed): its compensation is
    the rollback of that one effect."""
    undone_at: datetime | None = None

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

    def shown(self) -> "Approval":
        """The approval as people and logs may see it (sensitive arguments masked)."""
        if not self.sensitive:
            return self
        update: dict[str, Any] = {
            "args": self.shown_args,
            "approved_args": self.shown_approved_args,
        }
        if self.context is not None:
            update["context"] = masked(self.context, self.sensitive)
        # A digest of arguments with a secret in them could be matched by guessing.
        update |= {"args_digest": None, "approved_digest": None, "receipt": None}
        return self.model_copy(update=update)

    @property
    def withdrawn(self) -> bool:
        """Declined by Signoff because its run or its asker stopped waiting (cancelled,
        rolled back, the agent left): not a person's "no", so the call may be asked again."""
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


FACTS = TypeAdapter(list[Fact], config=DEFERRED)


class EffectReuse(Record):
    """A run handed another run's effect (the same idempotency key with the same arguments:
    the ledger's repeat in a lineage, or, across lineages, the outside system's, which dedupes
    by the key) relies on it: compensating that effect undoes what this run was told."""

    run_id: str
    call_id: str
    """The run relying on it, and its call."""
    from_run_id: str
    from_call_id: str
    """The effect relied on."""
    tool: str
    idempotency_key: str
    at: datetime
    undone_at: datetime | None = None
    """When the effect relied on was compensated all the same (and this run was told)."""


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
    """A notification to deliver: a change to `subject_id` (an approval, page, run or rule id)."""

    id: int
    topic: Literal[
        "approval_requested",
        "approval_decided",
        "approval_voted",
        "approval_reminded",
        "approval_waiting",
        "page_opened",
        "page_reminded",
        "page_acknowledged",
        "run_finished",
        "run_noted",
        "rule_expiring",
        "rule_uses_noted",
        "home_stale",
        "envelope_opened",
        "envelope_changed",
        "email_requested",
        "email_reminded",
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
    prev_hash: str | None = None
    """The hash of the event before it in commit order (`store.chain`), set at commit."""
    hash: str | None = None
    """This event's hash: of `prev_hash` and its content (`store.chain`), set at commit."""


class AuditAnchor(Record):
    """The audit chain's head at a moment: the event `seq` and its hash. `daily` anchors are
    taken by the server, `cut` ones by a prune where it removed events (what follows links
    to it), `manual` by `signoff audit anchor`; `signed` once a process with the key signed
    it (`runtime.signing`)."""

    seq: int
    kind: Literal["daily", "cut", "manual"]
    hash: str
    at: datetime
    signed: dict[str, Any] | None = None


class LearnedRule(Record):
    """An approval rule a person made from a decision ("approve + similar"): it approves, at
    once, calls of `tool` for which `condition` (CEL) holds, until `expires_at`. `proposed`
    until a second rule-writer confirms it (`needs_second`: the effect cannot be undone)."""

    id: str
    tool: str
    condition: str
    author: str
    reason: str
    state: Literal["proposed", "active", "revoked"] = "active"
    needs_second: bool = False
    from_approval: str | None = None
    created_at: datetime
    expires_at: datetime
    confirmed_by: str | None = None
    confirmed_at: datetime | None = None
    revoked_by: str | None = None
    revoked_at: datetime | None = None
    reminded_at: datetime | None = None
    noted_until: datetime | None = None
    """Until when its uses were told in the thread of the card it grew from."""
    uses: int = 0
    """How many approvals it approved (counted when read)."""

    def in_force(self, now: datetime) -> bool:
        return self.state == "active" and now < self.expires_at

    def status(self, now: datetime) -> str:
        """active, proposed, revoked or expired, as every surface shows it."""
        if self.state != "revoked" and now >= self.expires_at:
            return "expired"
        return self.state


class Envelope(Record):
    """A budget an approver handed out: calls of `tool` for which `condition` (CEL) holds
    are approved at once, citing it, while they fit what is left of `max_amount` (each call
    counting `amount`, a CEL expression, when given) and `max_calls`, until `expires_at`
    or revocation. `proposed` until a second writer confirms it (`needs_second`). Used up
    atomically across runs and workers; a call that failed or was undone gives its share
    back. `channel` and `message_ts`: its live message."""

    id: str
    tool: str
    condition: str
    amount: str | None = None
    max_amount: int | None = None
    max_calls: int | None = None
    used_amount: int = 0
    used_calls: int = 0
    author: str
    reason: str
    state: Literal["proposed", "active", "revoked"] = "active"
    needs_second: bool = False
    mode: Literal["enforce", "shadow"] = "enforce"
    from_approval: str | None = None
    channel: str | None = None
    message_ts: str | None = None
    created_at: datetime
    expires_at: datetime
    confirmed_by: str | None = None
    confirmed_at: datetime | None = None
    revoked_by: str | None = None
    revoked_at: datetime | None = None
    ended: str | None = None
    """How its end was announced (`expired`, `revoked`), once."""

    @property
    def exhausted(self) -> bool:
        amount_gone = self.max_amount is not None and self.used_amount >= self.max_amount
        calls_gone = self.max_calls is not None and self.used_calls >= self.max_calls
        return amount_gone or calls_gone

    def status(self, now: datetime) -> str:
        """proposed, active, exhausted, expired or revoked, as every surface shows it."""
        if self.state == "revoked":
            return "revoked"
        if now >= self.expires_at:
            return "expired"
        if self.state == "proposed":
            return "proposed"
        return "exhausted" if self.exhausted else "active"

    def in_force(self, now: datetime) -> bool:
        return self.status(now) == "active"
