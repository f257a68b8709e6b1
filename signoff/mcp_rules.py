"""Which MCP tool calls the proxy gates: ordered CEL rules over `tool` (the name) and `args`,
first match wins, each saying `allow` (forward, no question), `ask` (forward once a human
approves, under `policy` when given: routing) or `deny` (refuse with `reason`, nobody asked).

With no rule matching, the tool's MCP annotations decide: a tool that says it only reads
(`read_only_hint`) is forwarded, and every other tool asks (MCP's own default for a tool
that does not say is "may destroy"). A rule that fails to evaluate asks: it never lets a
call through. Rules are read from a TOML file:

    [[rule]]
    when = "tool == 'delete_file' && args.path.startsWith('/etc')"
    action = "deny"
    reason = "system files are off limits"

    [[rule]]
    when = "tool == 'transfer' && args.amount > 1000"
    action = "ask"
    policy = "finance"
"""

from __future__ import annotations

import functools
import logging
import tomllib
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from typing import Literal

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import field_validator
from pydantic import model_validator

Action = Literal["allow", "ask", "deny"]
log = logging.getLogger("signoff.mcp")


@functools.cache
def _environment() -> Any:
    import celpy

    return celpy.Environment()


@functools.cache
def _program(when: str) -> Any:
    from celpy import CELParseError

    environment = _environment()
    try:
        return environment.program(environment.compile(when))
    except CELParseError as exc:
        raise ValueError(f"when: {when!r} is not CEL: {exc}") from None


class Rule(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    when: str = Field(min_length=1)
    action: Action
    policy: str | None = Field(None, description="the Signoff policy that decides (ask)")
    reason: str | None = Field(None, description="what the model is told (deny)")

    @field_validator("when")
    @classmethod
    def _compiles(cls, when: str) -> str:
        _program(when)
        return when

    @model_validator(mode="after")
    def _fits(self) -> Rule:
        if self.policy and self.action != "ask":
            raise ValueError("only a rule that asks routes to a policy")
        return self


class Rules(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    rule: tuple[Rule, ...] = ()


@dataclass(frozen=True)
class Verdict:
    action: Action
    policy: str | None = None
    reason: str | None = None
    why: str = ""


def load_rules(path: Path | None) -> tuple[Rule, ...]:
    if path is None:
        return ()
    with path.open("rb") as file:
        return Rules.model_validate(tomllib.load(file)).rule


def judge(
    rules: Sequence[Rule], tool: str, args: Mapping[str, Any], annotations: Any | None
) -> Verdict:
    """What happens to one call (never `allow` by accident: errors ask)."""
    for number, rule in enumerate(rules, start=1):
        try:
            held = _holds(rule.when, tool, args)
        except Exception as exc:  # a broken rule must not let a call through
            log.warning("rule %d (%s) failed on %s: %s; asking", number, rule.when, tool, exc)
            return Verdict("ask", why=f"rule {number} failed: asking")
        if held:
            return Verdict(rule.action, rule.policy, rule.reason, f"rule {number}: {rule.when}")
    if annotations is not None and getattr(annotations, "read_only_hint", None) is True:
        return Verdict("allow", why="the tool says it only reads")
    return Verdict("ask", why="the tool may change something")


def _holds(when: str, tool: str, args: Mapping[str, Any]) -> bool:
    import celpy
    from celpy import celtypes

    activation = {"tool": celtypes.StringType(tool), "args": celpy.json_to_cel(dict(args))}
    result = _program(when).evaluate(activation)
    if not isinstance(result, celtypes.BoolType):
        raise TypeError(f"{when!r} gave {result!r}, not true or false")
    return bool(result)
