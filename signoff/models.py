"""What the `/v1` HTTP API answers with, as pydantic models: the client parses responses into
them and the server's OpenAPI document (`bot.openapi`) is generated from them, so the two
cannot drift apart. Only pydantic is imported here.

Each model allows fields it does not name (`extra="allow"`): a newer server may add one
without breaking an older client.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from typing import Literal

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field

ApprovalState = Literal["pending", "approved", "declined"]
RunStatus = Literal["running", "waiting_approval", "done", "failed", "cancelled"]


class Wire(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class Authority(Wire):
    """Who may decide an approval, recorded when it was asked: every process and every door
    judges a decision by this, whatever its own configuration says."""

    policy: str
    rule: str | None = Field(None, description="the approval rule that chose these settings")
    approvers: list[str] = Field(default_factory=list, description="people (user ids) asked")
    groups: list[str] = Field(
        default_factory=list, description="user groups asked (members resolved at decision)"
    )
    anyone: bool = Field(False, description="no approvers named: anyone but the requester")
    required_approvals: int = Field(1, ge=1)
    allow_self_approval: bool = False
    allow_edit: bool = False
    deadline: datetime | None = None
    on_timeout: Literal["decline", "escalate"] = "decline"
    remind_every: float | None = Field(None, description="seconds between reminders")
    max_reminders: int = 0
    escalate_to: str | None = None
    escalated: bool = False
    digest: str = Field(description="of the policy's settings as asked under")
    config_digest: str | None = Field(
        None, description="the configuration digest of the process that asked"
    )
    filled: bool = Field(
        False, description="filled in after an upgrade from the policy in force then"
    )


class LimitLine(Wire):
    """One limit a call counted against, as it stood when it was asked."""

    name: str
    mode: Literal["enforce", "shadow"] = "enforce"
    outcome: Literal["within", "over", "error"] = Field(
        description="within the limit, past it (asked or declined), or not counted (asked)"
    )
    used: int = Field(description="what the window held before this call")
    amount: int = Field(description="what this call adds")
    after: int
    max: int
    held: bool = Field(description="whether this call holds its amount")
    error: str | None = Field(None, description="why the call could not be counted")
    line: str = Field(description='"$420 of $500 for this customer in 30 days, after this refund"')


class Approval(Wire):
    """An approval as a client sees it (sensitive arguments masked)."""

    id: str
    tool: str
    args: dict[str, Any] = Field(description="the proposed arguments")
    approved_args: dict[str, Any] | None = Field(
        None, description="what the approver approved, when they edited the arguments"
    )
    policy: str
    state: ApprovalState
    run_id: str | None = None
    call_id: str | None = None
    decided_by: str | None = None
    decided_for: str | None = Field(
        None, description="the away person decided_by decided for, as their delegate"
    )
    decided_at: datetime | None = None
    reason: str | None = None
    requested_by: str | None = None
    deadline: datetime | None = None
    required_approvals: int = Field(1, ge=1)
    duplicate_of: str | None = None
    created_at: datetime
    rule: str | None = Field(None, description="the approval rule it was made under")
    context: dict[str, Any] | None = Field(
        None, description="the facts the tool's context function read when it was asked"
    )
    context_error: str | None = Field(None, description="why the context could not be read")
    agent_reason: str | None = Field(None, description="the agent's stated reason, shortened")
    reasked: dict[str, Any] | None = Field(
        None,
        description="why a call is asked again (approval_id, why, text): a call approved "
        "before that must not run as approved, or (why `question`, with `by`) the agent's "
        "call after an approver's question, its answer being `agent_reason`",
    )
    question: str | None = Field(
        None,
        description="an approver's question back to the agent instead of a decision (state "
        "`declined`, decided_by who asked): the call did not run and may be asked again",
    )
    limits: list[LimitLine] = Field(
        default_factory=list, description="the limits the call counted against"
    )
    envelope_id: str | None = Field(None, description="the envelope that approved it, if one did")
    authority: Authority | None = Field(
        None, description="who may decide it (None: asked before approvals carried it)"
    )
    votes: list[str] | None = Field(
        None, description="who approved it so far (a quorum fills up vote by vote)"
    )
    resume_state: str | None = Field(
        None,
        description="what its asker keeps here to resume from once it is decided (as the "
        "first request gave it); only in the answers of GET /v1/approvals/{id} and its wait",
    )
    waiter_until: datetime | None = Field(
        None,
        description="someone waits for the answer until then (the heartbeat of a wait or "
        "event stream on it); null: nobody's wait is live",
    )
    waiter_left_at: datetime | None = Field(
        None, description="when the last waiter's heartbeat lapsed with it pending"
    )
    waiter_note: str | None = Field(
        None,
        description="'nobody is waiting for this answer now' while pending with no waiter; "
        "on an approval decided with nobody waiting, that the call runs only if asked again",
    )
    cool_off: Literal["waiting", "ran", "cancelled"] | None = Field(
        None,
        description="an approved call under a policy's cool_off or undo_for: waiting out its "
        "cool-off (until cool_off_until), ran, or cancelled (by cool_off_by; it never ran)",
    )
    cool_off_until: datetime | None = Field(None, description="when its cool-off ends")
    cool_off_by: str | None = Field(None, description="who cancelled it in its cool-off")
    undo_until: datetime | None = Field(
        None, description="until when the call that ran may be undone (its policy's undo_for)"
    )
    undone_by: str | None = Field(None, description="who undid the call that ran")
    undone_at: datetime | None = None

    @property
    def decided(self) -> bool:
        return self.state != "pending"

    @property
    def withdrawn(self) -> bool:
        """Declined by no person: whoever asked (or its run) stopped waiting, so the same
        call may be asked again."""
        withdrawal = (self.reason or "").startswith("withdrawn:")
        return self.state == "declined" and self.decided_by == "signoff" and withdrawal

    @property
    def final_args(self) -> dict[str, Any]:
        """The arguments to act on: the approved (possibly edited) ones, else the proposed."""
        return self.approved_args if self.approved_args is not None else self.args


class Budget(Wire):
    max_steps: int | None = None
    max_input_tokens: int | None = None
    max_output_tokens: int | None = None
    max_cost: float | None = None


class Usage(Wire):
    steps: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0


class InFlight(Wire):
    call_id: str
    tool: str


class RunSummary(Wire):
    """A run as the list of runs shows it."""

    id: str
    agent: str
    task: str
    status: RunStatus
    step: int
    budget: Budget
    usage: Usage
    stop_reason: str | None = None
    error: str | None = None
    requested_by: str | None = None
    lineage_id: str
    parent_id: str | None = None
    fork_step: int | None = None
    dry_run: bool = False
    created_at: datetime
    updated_at: datetime
    outcome: (
        Literal["done", "declined", "failed", "cancelled", "rolled back", "expired", "undone"]
        | None
    ) = Field(
        None,
        description="how it ended (only `done` did what was asked); null while it has not",
    )


class Run(RunSummary):
    """A run and how it stands or ended: what it waits for, its answer, every decision."""

    ended: str | None = Field(
        None, description="how it ended, in a sentence: the error, or who declined and why"
    )

    pending_approvals: list[Approval] = Field(default_factory=list)
    answer: str | None = Field(None, description="the final answer of a finished run")
    approvals: list[Approval] = Field(
        default_factory=list, description="every approval it asked for, oldest first"
    )
    in_flight: list[InFlight] | None = Field(
        None, description="on a 202 cancel: the tools still running; the run ends after them"
    )
    note: str | None = Field(None, description="on a 202 cancel: what happens next, in words")


class Resolved(Wire):
    """An in-doubt effect as a person settled it; the run goes on in the background."""

    call_id: str
    tool: str
    status: str
    result: Any = None
    error: str | None = None


class ApprovalList(Wire):
    approvals: list[Approval]
    next_cursor: str | None = Field(description="ask again with cursor= this; null: the end")


class DeliveryAttempt(Wire):
    """One attempt at POSTing an approval's decision to its callback URL, or at e-mailing
    an approver (`channel`: "email")."""

    channel: Literal["callback", "email"] = "callback"
    attempt: int = Field(ge=1, description="1 for the first attempt of a delivery round")
    at: datetime
    url: str = Field(description="the callback URL, or mailto: the approver")
    state: ApprovalState = Field(description="the decision it carried (pending: a request)")
    delivered: bool
    status_code: int | None = Field(None, description="the receiver's HTTP status, if any")
    error: str | None = Field(None, description="what went wrong; null once delivered")
    next_attempt_at: datetime | None = Field(
        None, description="when it is tried again; null: delivered, or out of attempts"
    )


class DeliveryList(Wire):
    deliveries: list[DeliveryAttempt] = Field(description="oldest first")


class RunList(Wire):
    runs: list[RunSummary]
    next_cursor: str | None


class AuditEvent(Wire):
    action: str
    actor: str
    run_id: str | None = None
    approval_id: str | None = None
    detail: dict[str, Any] = Field(default_factory=dict)
    at: datetime
    id: int | None = None


class AuditPage(Wire):
    events: list[AuditEvent]
    more: bool


class Receipt(Wire):
    """A decision signed by Signoff (`signoff.receipts.verify` checks one)."""

    type: str
    version: int
    approval_id: str
    run_id: str | None = None
    call_id: str | None = None
    tool: str
    decision: Literal["approved", "declined"]
    decided_by: str | None = None
    deciders: list[str | None]
    decided_at: str
    reason: str | None = None
    args_digest: str
    shown_args_digest: str
    card_digest: str
    idempotency_key: str | None = None
    policy: dict[str, Any]
    signature: dict[str, str]


class SigningKey(Wire):
    """One public key of the JWKS (RFC 8037: an Ed25519 key)."""

    kty: str
    crv: str
    x: str
    kid: str
    alg: str
    use: str


class KeySet(Wire):
    """The public keys receipts and audit anchors are signed with (a JWKS)."""

    keys: list[SigningKey]


class ReceiptCheck(Wire):
    """Whether a receipt verified: the key that signed it, or why not."""

    valid: bool
    kid: str | None = None
    why: str | None = None


class InDoubt(Wire):
    run_id: str
    call_id: str
    tool: str | None = None


class Envelope(Wire):
    """A budget an approver handed out, and how much of it is used."""

    id: str
    tool: str
    when: str
    amount: str | None = Field(None, description="CEL: what a call uses of max_amount")
    max_amount: int | None = None
    max_calls: int | None = None
    used_amount: int
    used_calls: int
    status: Literal["proposed", "active", "exhausted", "expired", "revoked"]
    mode: Literal["enforce", "shadow"]
    author: str
    reason: str
    needs_second: bool
    confirmed_by: str | None = None
    revoked_by: str | None = None
    channel: str | None = None
    created_at: str
    expires_at: str
    line: str = Field(description="how every surface says it")


class EnvelopeList(Wire):
    envelopes: list[Envelope] = Field(description="newest first")


class Error(Wire):
    """Every refusal and failure: the reason, and what a client needs to act on it."""

    error: str
    kind: str | None = Field(None, description="DiskFull when the database's disk is full")
    approval: Approval | None = Field(None, description="the approval as it was decided")
    in_doubt: InDoubt | None = None


RESPONSES: tuple[type[Wire], ...] = (
    Approval,
    ApprovalList,
    DeliveryList,
    Run,
    RunList,
    Resolved,
    AuditPage,
    Receipt,
    KeySet,
    ReceiptCheck,
    Envelope,
    EnvelopeList,
    Error,
)
