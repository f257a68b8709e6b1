"""Rules people make from a decision ("approve + similar"), as pure functions: the rule a
call suggests, its backtest over the audit trail, the limits a configuration sets, and the
TOML a team reviews. The commands that store, confirm, revoke and apply rules are in
`runtime.approvals.rule_book`.

A learned rule only ever approves at once, only calls of its own tool, only until it
expires, and never beyond the ceiling the configuration sets for that tool (a CEL condition
the call must also meet). Its condition is CEL, evaluated by cel-python like every rule.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from datetime import datetime
from datetime import timedelta
from typing import Any
from typing import Literal

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import field_validator
from pydantic import model_validator

from runtime import errors
from runtime.approvals.policy_types import Approvers
from runtime.approvals.policy_types import PositiveDuration
from runtime.approvals.rules import Facts
from runtime.approvals.rules import RuleEvaluationError
from runtime.approvals.rules import activation
from runtime.approvals.rules import holds
from runtime.approvals.rules import program
from store.records import LearnedRule

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SHORT_WORD = re.compile(r"^[\w.@:+-]{1,40}$")
_EXPIRED = "expired"


class LearnedRulesConfig(BaseModel):
    """`[learned_rules]` in signoff.toml: who may write rules and how far they may go."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    writers: Approvers = ()
    """User (or user-group) ids who may make, confirm and revoke rules; none: nobody may."""
    ceilings: dict[str, str] = Field(default_factory=dict)
    """Per tool, a CEL condition every call a learned rule approves must meet as well
    (`issue_refund = "args.amount_cents <= 10000"`); a rule never approves beyond it."""
    default_expiry: PositiveDuration = timedelta(days=7)
    max_expiry: PositiveDuration = timedelta(days=90)
    backtest_size: int = Field(200, ge=1, le=100_000)
    """How many of a tool's latest requests a backtest replays."""
    remind_before: PositiveDuration = timedelta(days=1)

    @field_validator("ceilings")
    @classmethod
    def _ceilings_parse(cls, ceilings: dict[str, str]) -> dict[str, str]:
        for condition in ceilings.values():
            program(condition)
        return ceilings

    @model_validator(mode="after")
    def _expiry_within_max(self) -> LearnedRulesConfig:
        if self.default_expiry > self.max_expiry:
            raise ValueError("default_expiry is longer than max_expiry")
        return self


class RuleRefused(errors.InvalidRequest):
    """This rule may not be made, confirmed or revoked (the message says why)."""


class NeedsConfirmation(RuleRefused):
    """The rule would have approved requests people declined: confirm that explicitly.

    Carries `backtest`."""

    backtest: Backtest


class RuleNotFound(errors.SignoffRuntimeError):
    """No learned rule with this id."""


# the rule a call suggests


def suggest(tool: str, args: Mapping[str, Any]) -> str:
    """A condition matching calls like this one: the same tool, the same short words
    (`currency == "EUR"`), the same flags, numbers up to this one's. Ids and free text are
    left out (a rule for one order id would never match again); the person edits the rest."""
    parts = [f"tool == {_cel_string(tool)}"]
    for name, value in sorted(args.items()):
        if not _NAME.match(name) or _is_id(name):
            continue
        if isinstance(value, bool):
            parts.append(f"args.{name} == {'true' if value else 'false'}")
        elif isinstance(value, int | float):
            parts.append(f"args.{name} <= {value!r}")
        elif isinstance(value, str) and _SHORT_WORD.match(value):
            parts.append(f"args.{name} == {_cel_string(value)}")
    return " && ".join(parts)


def _is_id(name: str) -> bool:
    lowered = name.lower()
    return lowered == "id" or lowered.endswith(("_id", "_ids", "key", "_ref"))


def _cel_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


# the backtest


Outcome = Literal["approved", "edited", "declined", "expired", "pending", "auto"]


@dataclass(frozen=True, slots=True)
class Hit:
    """One past request the rule would have approved at once."""

    approval_id: str
    run_id: str | None
    at: datetime
    outcome: Outcome
    decided_by: str | None = None
    reason: str | None = None
    card: tuple[str, str] | None = None
    """The Slack channel and ts of its card, when it had one (to link it)."""


@dataclass(frozen=True, slots=True)
class Backtest:
    """What a rule would have done to a tool's latest requests."""

    tool: str
    condition: str
    considered: int
    hits: tuple[Hit, ...] = ()
    errors: int = 0
    """Requests the condition could not be evaluated on (it would not have approved them)."""
    error: str | None = None
    """The first such error."""
    ceiling_blocked: int = 0
    """Requests the condition matched that the tool's ceiling would still have asked about."""

    @property
    def would_approve(self) -> int:
        return len(self.hits)

    def of(self, outcome: Outcome) -> list[Hit]:
        return [hit for hit in self.hits if hit.outcome == outcome]

    @property
    def declined(self) -> list[Hit]:
        return self.of("declined")

    @property
    def edited(self) -> list[Hit]:
        return self.of("edited")

    def as_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "condition": self.condition,
            "considered": self.considered,
            "would_approve": self.would_approve,
            "declined": [_hit_dict(h) for h in self.declined],
            "edited": [_hit_dict(h) for h in self.edited],
            "errors": self.errors,
            "error": self.error,
            "ceiling_blocked": self.ceiling_blocked,
        }


def _hit_dict(hit: Hit) -> dict[str, Any]:
    return {
        "approval_id": hit.approval_id,
        "run_id": hit.run_id,
        "at": hit.at.isoformat(),
        "decided_by": hit.decided_by,
        "reason": hit.reason,
    }


def backtest(
    tool: str, condition: str, requests: Sequence[Mapping[str, Any]], *, ceiling: str | None
) -> Backtest:
    """Replay `condition` (and the tool's `ceiling`) over past requests, newest first (rows
    of `Store.backtest_requests`). Each request is evaluated once, with its arguments as the
    audit trail has them (sensitive ones masked, so a rule on them does not match)."""
    import celpy

    program(condition)
    hits: list[Hit] = []
    failed, blocked, first_error = 0, 0, None
    base = activation(tool, {}, Facts())  # `run` is not known here; only args and now vary
    timed = "now" in condition or "now" in (ceiling or "")
    for request in requests:
        detail = request["detail"] or {}
        args = detail.get("args") or {}
        if timed:
            context = activation(tool, args, Facts(now=request["at"]))
        else:
            context = base | {"args": celpy.json_to_cel(dict(args))}
        try:
            if not holds(condition, context):
                continue
            if ceiling is not None and not holds(ceiling, context):
                blocked += 1
                continue
        except RuleEvaluationError as exc:
            failed += 1
            first_error = first_error or str(exc)
            continue
        hits.append(_hit(request))
    return Backtest(tool, condition, len(requests), tuple(hits), failed, first_error, blocked)


def _hit(request: Mapping[str, Any]) -> Hit:
    decision = request["decision"]
    decided = request["decision_detail"] or {}
    outcome: Outcome
    if request["action"] != "approval_requested":
        outcome = "auto"
    elif decision == "approval_declined":
        outcome = "expired" if decided.get("reason") == _EXPIRED else "declined"
    elif decision == "approval_approved":
        outcome = "edited" if decided.get("approved_args") else "approved"
    else:
        outcome = "pending"
    return Hit(
        approval_id=request["approval_id"],
        run_id=request["run_id"],
        at=request["at"],
        outcome=outcome,
        decided_by=request["decided_by"],
        reason=decided.get("reason"),
    )


# review in version control


def fields(rule: LearnedRule, now: datetime) -> dict[str, Any]:
    """A rule as every surface lists it: what it approves, its state at `now`, and who made,
    confirmed or revoked it."""
    return {
        "id": rule.id,
        "tool": rule.tool,
        "when": rule.condition,
        "status": rule.status(now),
        "author": rule.author,
        "reason": rule.reason,
        "created": rule.created_at.isoformat(timespec="seconds"),
        "expires": rule.expires_at.isoformat(timespec="seconds"),
        "uses": rule.uses,
        "confirmed_by": rule.confirmed_by,
        "revoked_by": rule.revoked_by,
        "from_approval": rule.from_approval,
    }


def as_toml(rules: Iterable[LearnedRule], *, now: datetime) -> str:
    """The rules as `[[learned_rules.rule]]` tables (strings JSON-quoted, which TOML reads
    as basic strings), for review; the file is a record, not a configuration to load."""
    out = [f"# learned approval rules, exported {now.isoformat(timespec='seconds')}"]
    for rule in rules:
        out.append("\n[[learned_rules.rule]]")
        for key, value in fields(rule, now).items():
            if value is not None:
                out.append(f"{key} = {json.dumps(value, ensure_ascii=False)}")
    return "\n".join(out) + "\n"


@dataclass(frozen=True, slots=True)
class Draft:
    """A rule proposed from a call, before its backtest ran: what the modal opens with."""

    tool: str
    condition: str
    expiry: timedelta
    max_expiry: timedelta
    ceiling: str | None
    needs_second: bool

    def tested(self, backtest: Backtest) -> Proposal:
        """The proposal once its backtest ran."""
        return Proposal(
            self.tool,
            self.condition,
            self.expiry,
            self.max_expiry,
            self.ceiling,
            self.needs_second,
            backtest,
        )


@dataclass(frozen=True, slots=True)
class Proposal(Draft):
    """What the modal and `signoff policy propose` show before a rule is saved."""

    backtest: Backtest
    problems: list[str] = field(default_factory=list)
