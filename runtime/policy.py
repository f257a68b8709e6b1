"""Approval policies: who may decide, how many must agree, reminders, escalation, timeouts.

Approvers are Slack user ids (`U…`/`W…`) or user-group ids (`S…`). Group membership is
resolved through a `Directory`, which the bot implements with `usergroups.users.list`.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Any, Literal, Protocol

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)?\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
SYSTEM_ACTOR = "signoff"


def parse_duration(value: Any, *, unit_required: bool = False) -> Any:
    """`90`, `"90s"`, `"15m"`, `"2h"`, `"1d"` or a timedelta (bare numbers are seconds)."""
    if isinstance(value, timedelta) or value is None:
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return timedelta(seconds=value)
    if isinstance(value, str):
        match = _DURATION.match(value)
        if match and (match[2] or not unit_required):
            try:
                return timedelta(seconds=float(match[1]) * _UNITS[match[2] or "s"])
            except OverflowError:
                raise ValueError(f"{value!r} is longer than any date") from None
        raise ValueError(f"{value!r} is not a duration with a unit (e.g. 90s, 15m, 2h, 30d)")
    return value


Duration = Annotated[timedelta, BeforeValidator(parse_duration)]


class Policy(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    channel: str | None = None
    approvers: tuple[str, ...] = ()
    allow_self_approval: bool = False
    required_approvals: int = Field(default=1, ge=1)
    allow_edit: bool = False
    remind_every: Duration | None = None
    max_reminders: int = Field(default=3, ge=0)
    escalate_to: str | None = None
    timeout: Duration | None = None
    on_timeout: Literal["decline", "escalate"] = "decline"

    @field_validator("approvers")
    @classmethod
    def _ids(cls, approvers: tuple[str, ...]) -> tuple[str, ...]:
        for who in approvers:
            if not re.fullmatch(r"[UWS][A-Z0-9]{2,}", who):
                raise ValueError(f"{who!r} is not a Slack user id (U…/W…) or user-group id (S…)")
        return approvers

    @field_validator("remind_every", "timeout")
    @classmethod
    def _positive(cls, value: timedelta | None) -> timedelta | None:
        if value is not None and value <= timedelta(0):
            raise ValueError("must be a positive duration")
        return value


class Policies(BaseModel):
    """The default policy and per-tool overrides of it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    default: Policy = Policy()
    tools: dict[str, Policy] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _escalations_name_someone(self) -> Policies:
        for name in ["default", *self.tools]:
            policy = self.default if name == "default" else self.for_tool(name)[1]
            if policy.on_timeout == "escalate" and not policy.escalate_to:
                raise ValueError(
                    f"policy {name!r}: on_timeout = 'escalate' needs escalate_to (a user or "
                    "user group to escalate to); otherwise the approval waits unseen"
                )
        return self

    def for_tool(self, tool: str) -> tuple[str, Policy]:
        """The policy's name and the policy for a tool: its override merged over the default."""
        override = self.tools.get(tool)
        if override is None:
            return "default", self.default
        merged = self.default.model_dump() | override.model_dump(exclude_unset=True)
        return tool, Policy.model_validate(merged)


def open_policies(policies: Policies) -> list[str]:
    """The policies that name no approvers (anyone but the requester may approve)."""
    named = {"default": policies.default} | {t: policies.for_tool(t)[1] for t in policies.tools}
    return [name for name, policy in named.items() if not policy.approvers]


class Directory(Protocol):
    """Resolves a user group to its members."""

    async def members(self, group_id: str) -> frozenset[str]: ...


class StaticDirectory:
    """A directory from a fixed mapping (tests, or deployments without user groups)."""

    def __init__(self, groups: dict[str, set[str] | frozenset[str]] | None = None) -> None:
        self._groups = {g: frozenset(m) for g, m in (groups or {}).items()}

    async def members(self, group_id: str) -> frozenset[str]:
        return self._groups.get(group_id, frozenset())


async def may_decide(policy: Policy, user: str, directory: Directory, *, escalated: bool) -> bool:
    """Whether `user` is an approver; an escalated approval also admits `escalate_to`.

    A policy that names no approvers lets anyone decide (except the requester approving
    their own action, which the caller checks); escalation never narrows that.
    """
    if not policy.approvers:
        return True
    approvers = list(policy.approvers)
    if escalated and policy.escalate_to:
        approvers.append(policy.escalate_to)
    for who in approvers:
        if who == user:
            return True
        if who.startswith("S") and user in await directory.members(who):
            return True
    return False
