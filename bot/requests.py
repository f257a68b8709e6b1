"""What a client may ask of Signoff: the HTTP API's request bodies, which the CLI checks its
options against too, so both refuse the same input for the same reason. The numbers live in
`runtime.limits`. No aiohttp is imported here: the CLI loads this without the server.

One validation layer for every surface (the API, the CLI, Slack's `decision_refusal`), so it
belongs to none: it imports no surface module, and the layers test keeps it that way.
"""

from __future__ import annotations

import re
from datetime import UTC
from datetime import datetime
from typing import Any
from typing import Literal

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import HttpUrl
from pydantic import field_validator
from pydantic import model_validator

from bot.policy_ids import SLACK_USER_ID
from runtime.limits import ID_PATTERN
from runtime.limits import MAX_AGENT
from runtime.limits import MAX_REASON
from runtime.limits import MAX_REQUESTER
from runtime.limits import MAX_RESUME_STATE
from runtime.limits import MAX_TASK
from runtime.limits import MAX_TOOL
from runtime.limits import check_args
from runtime.records import Budget


def _slack_user_id(by: str) -> str:
    if not re.fullmatch(SLACK_USER_ID, by):
        raise ValueError(f"{by[:80]!r} is not a Slack user id (U… or W…)")
    return by


def _small_args(args: Any) -> Any:
    """Checked before pydantic walks the value (mode="before"), so a hostile depth never
    reaches a recursive validator or encoder."""
    if args is not None:
        check_args(args)
    return args


class RunRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent: str = Field(min_length=1, max_length=MAX_AGENT)
    task: str = Field(min_length=1, max_length=MAX_TASK)
    run_id: str | None = Field(None, pattern=ID_PATTERN)
    requested_by: str | None = Field(None, max_length=MAX_REQUESTER)
    budget: Budget | None = None


class ApprovalRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool: str = Field(min_length=1, max_length=MAX_TOOL)
    args: dict[str, Any] = Field(default_factory=dict)
    approval_id: str | None = Field(None, pattern=ID_PATTERN)
    requested_by: str | None = Field(None, max_length=MAX_REQUESTER)
    policy: str | None = Field(None, max_length=MAX_TOOL)
    callback_url: HttpUrl | None = None
    sensitive: list[str] = Field(default_factory=list, max_length=100)
    """Arguments to mask wherever the approval is shown (Slack, CLI, API, audit, logs)."""
    resume_state: str | None = Field(
        None,
        max_length=MAX_RESUME_STATE,
        description="opaque text the asking agent resumes from once the approval is decided "
        "(e.g. the OpenAI Agents SDK's paused RunState): kept as the first request gave it, "
        "shown to no person, returned whole by GET /v1/approvals/{id} and its wait",
    )

    _args = field_validator("args", mode="before")(_small_args)


class PersonRequest(BaseModel):
    """Who acts on an approval after its decision: cancel its call's cool-off, or undo it."""

    model_config = ConfigDict(extra="forbid")

    by: str = Field(description="the acting human's Slack user id (an approver of it)")

    _by = field_validator("by")(_slack_user_id)


class DecisionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    decision: Literal["approved", "declined", "asked"] = Field(
        description="`asked`: a question back to the agent instead of a decision (the "
        "question is `reason`); the call does not run, the agent reads the question as the "
        "tool's result, and its next call is asked again"
    )
    by: str = Field(description="the deciding human's Slack user id")
    reason: str | None = Field(None, max_length=MAX_REASON)
    args: dict[str, Any] | None = None
    separate: bool = Field(
        False,
        description="approve a call whose key an earlier effect used with other arguments "
        "as an effect of its own (re-keyed)",
    )

    _args = field_validator("args", mode="before")(_small_args)

    _by = field_validator("by")(_slack_user_id)

    @model_validator(mode="after")
    def _question_said(self) -> DecisionRequest:
        if self.decision == "asked" and not (self.reason or "").strip():
            raise ValueError("reason: asking needs the question (the reason)")
        return self


class ResolveRequest(BaseModel):
    """What the outside system shows of an in-doubt effect (a page's "It happened")."""

    model_config = ConfigDict(extra="forbid")

    happened: bool


class CancelRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field("", max_length=MAX_REASON)
    compensate: bool = Field(
        False, description="Undo a reversible tool still running once it ends (its compensator)."
    )
    compensate_shared: bool = Field(
        False,
        description=(
            "Undo it even when other runs rely on what it did (handed the same effect): they "
            "are paged for and noted. Without it such a cancel is refused (409), changing "
            "nothing."
        ),
    )


class EnvelopeRequest(BaseModel):
    """A budget handed out: calls of `tool` for which `when` holds are approved at once
    while they fit `max_amount` (each counting `amount`) and `max_calls`, until it expires."""

    model_config = ConfigDict(extra="forbid")

    tool: str = Field(min_length=1, max_length=MAX_TOOL)
    when: str = Field(min_length=1, max_length=2000, description="CEL over the call")
    by: str = Field(description="the Slack user id handing it out (an approver or rule-writer)")
    reason: str = Field(min_length=1, max_length=MAX_REASON)
    max_amount: int | None = Field(None, ge=1, le=2**62, description="in the amount's unit")
    max_calls: int | None = Field(None, ge=1, le=2**31)
    amount: str | None = Field(
        None,
        max_length=500,
        description="CEL: what a call uses (default: the tool's money argument)",
    )
    expires_in_seconds: int | None = Field(
        None, ge=1, le=2**31, description="default: [envelopes] default_expiry"
    )
    channel: str | None = Field(
        None, pattern=r"^[CG][A-Z0-9]{2,20}$", description="where its live message goes"
    )

    _by = field_validator("by")(_slack_user_id)


class EnvelopeChangeRequest(BaseModel):
    """A second writer's confirmation, or a revocation (its author or a rule-writer)."""

    model_config = ConfigDict(extra="forbid")

    by: str = Field(description="the Slack user id acting")

    _by = field_validator("by")(_slack_user_id)


def instant(text: str) -> datetime:
    """An ISO 8601 date and time as a person or a query gives it, UTC unless it says
    otherwise (ValueError, saying so, if it is not one)."""
    try:
        found = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a date and time") from None
    return found if found.tzinfo else found.replace(tzinfo=UTC)


def refusal(request: type[BaseModel], /, **values: Any) -> tuple[str, str] | None:
    """The field and the reason the HTTP API would refuse `values` for as a `request`
    body, or None (its first refusal, as its 400 names it)."""
    from pydantic import ValidationError

    try:
        request.model_validate(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        return (str(first["loc"][0]) if first["loc"] else "", first["msg"])
    return None


def decision_refusal(**values: Any) -> tuple[str, str] | None:
    """The field and the reason the HTTP API would refuse this decision for, or None: the one
    check every surface (API, CLI, Slack) puts a decision through before recording it."""
    return refusal(DecisionRequest, **values)


class ReceiptCheckRequest(BaseModel):
    """A receipt to verify, and optionally the call it should approve."""

    model_config = ConfigDict(extra="forbid")

    receipt: dict[str, Any]
    args: dict[str, Any] | None = Field(
        None, description="the arguments the receipt must approve (their digest is compared)"
    )
    idempotency_key: str | None = Field(None, description="the key the call runs under")

    _args = field_validator("args", mode="before")(_small_args)
