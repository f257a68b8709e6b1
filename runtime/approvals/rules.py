"""Approval rules: a CEL condition over the call (`when`) and what follows when it holds.

A rule routes the call to other approvers (anything a policy sets), approves it at once
(`auto_approve`) or declines it at once (`deny`). Expressions are CEL, evaluated by
cel-python with no functions beyond CEL's own, over `args`, `tool`, `run`, `now` and the
`limits` the call counts against: an
expression cannot reach files, the network or Python. Each is compiled once, when the
configuration is read (`runtime.approvals.rule_check` then checks it against the tools). cel-python
is imported on the first rule, so a configuration without rules never loads it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from datetime import UTC
from datetime import datetime
from typing import Any
from typing import Literal

from pydantic import Field
from pydantic import field_validator
from pydantic import model_validator

from runtime.approvals.policy_types import Settings

USAGE_FIELDS = ("steps", "input_tokens", "output_tokens", "cost")


@functools.cache
def _environment() -> Any:
    """cel-python's compiled runner: each condition's syntax tree is turned into Python once,
    which evaluates about three times faster than walking the tree. It needs the parser to
    build its own kind of tree (a subclass of lark's), and the parser is one per process,
    loaded from the machine's cache (`cel_parser`)."""
    import celpy

    from runtime.approvals import cel_parser

    cel_parser.install(celpy.CompiledRunner.tree_node_class)
    return celpy.Environment(runner_class=celpy.CompiledRunner)


class Rule(Settings):
    """One `[[policies.tools.<tool>.rules]]` entry: a condition, and anything a policy sets
    (`Settings`) for the calls it matches. Unset policy settings keep the tool's."""

    when: str = Field(min_length=1)
    label: str | None = None
    """How people read the condition ("amount over $200"); the expression if not given."""
    auto_approve: bool = False
    deny: str | None = Field(None, min_length=1)
    """Decline at once; the text is the reason the model and the audit log are given."""
    mode: Literal["enforce", "shadow"] = "enforce"
    """`shadow`: the rule decides nothing; what it would have done is recorded (audit event,
    metric, a line on the run) and the next rule is tried."""

    @field_validator("when")
    @classmethod
    def _parses(cls, when: str) -> str:
        program(when)
        return when

    @model_validator(mode="after")
    def _one_action(self) -> Rule:
        if self.auto_approve and self.deny:
            raise ValueError("a rule either approves at once (auto_approve) or denies, not both")
        if not self.asks and self.overrides():
            names = ", ".join(sorted(self.overrides()))
            raise ValueError(f"a rule that never asks anyone has no use for {names}")
        return self

    @property
    def asks(self) -> bool:
        return not self.auto_approve and not self.deny

    @property
    def action(self) -> Literal["ask", "auto_approve", "deny"]:
        return "auto_approve" if self.auto_approve else "deny" if self.deny else "ask"

    def overrides(self) -> dict[str, Any]:
        """The policy settings this rule sets."""
        return self.model_dump(
            exclude_unset=True, exclude={"when", "label", "auto_approve", "deny", "mode"}
        )

    def describe(self) -> str:
        return self.label or self.when


class RuleSyntaxError(ValueError):
    """A rule's `when` is not CEL."""


@functools.lru_cache(maxsize=4096)
def program(when: str) -> Any:
    """The compiled condition (a `celpy.Runner`); each text is compiled once per process."""
    from celpy import CELParseError

    environment = _environment()
    try:
        return environment.program(environment.compile(when))
    except CELParseError as exc:
        where = f" (the error is at column {exc.column})" if exc.column else ""
        raise RuleSyntaxError(f"`{when}` is not a CEL expression{where}") from None


def tree(when: str) -> Any:
    """The condition's syntax tree (a `lark.Tree`)."""
    return program(when).ast


# evaluating


@dataclass(frozen=True, slots=True)
class Facts:
    """What a rule's condition sees besides the arguments: the run so far, the time, and
    the limits the call counts against (`limits.<name>.used`, `.left`, `.max`)."""

    run_id: str = ""
    agent: str = ""
    task: str = ""
    requested_by: str = ""
    usage: Mapping[str, int | float] = field(default_factory=dict)
    now: datetime = datetime(1970, 1, 1, tzinfo=UTC)
    limits: Mapping[str, Mapping[str, int]] = field(default_factory=dict)


class RuleEvaluationError(Exception):
    """A condition failed while it ran (a missing key, a division by zero, not a boolean)."""


def holds(when: str, context: Mapping[str, Any]) -> bool:
    """Whether the condition is true for this call (`context`: its `activation`)."""
    try:
        value = program(when).evaluate(dict(context))
    except Exception as exc:  # cel-python raises CELEvalError and, rarely, Python's own
        raise RuleEvaluationError(_one_line(exc)) from None
    from celpy import celtypes

    if not isinstance(value, celtypes.BoolType):
        raise RuleEvaluationError(f"gave {_one_line(value)}, not true or false")
    return bool(value)


def activation(tool: str, args: Mapping[str, Any], facts: Facts) -> dict[str, Any]:
    """The call as CEL values, made once for all of a tool's rules."""
    import celpy
    from celpy import celtypes

    usage = {name: facts.usage.get(name, 0) for name in USAGE_FIELDS}
    run = {
        "id": facts.run_id,
        "agent": facts.agent,
        "task": facts.task,
        "requested_by": facts.requested_by,
        "usage": usage | {"cost": float(usage["cost"])},
    }
    context = {
        "args": celpy.json_to_cel(dict(args)),
        "tool": celtypes.StringType(tool),
        "run": celpy.json_to_cel(run),
        "now": celtypes.TimestampType(facts.now.astimezone(UTC)),
    }
    if facts.limits:
        context["limits"] = celpy.json_to_cel({k: dict(v) for k, v in facts.limits.items()})
    return context


def _one_line(value: object) -> str:
    text = " ".join(
        str(value.args[0] if isinstance(value, Exception) and value.args else value).split()
    )
    return text[:200]
