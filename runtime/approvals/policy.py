"""Approval policies: who may decide, how many must agree, reminders, escalation, timeouts.

Approvers are user ids or user-group ids, as the `Directory` knows them; group membership is
resolved through it. The bot's directory is Slack's, and the bot checks Slack's id formats
when it loads policies (`bot.policy_ids`).
"""

from __future__ import annotations

from typing import Any
from typing import Protocol

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import model_validator

from runtime.approvals.policy_types import Settings
from runtime.approvals.policy_types import parse_duration as parse_duration  # its old home
from runtime.approvals.rules import Rule
from store import Approval
from store import ApprovalState
from store.records import RuleMatch

SYSTEM_ACTOR = "signoff"


def approved_at_once(approval: Approval, match: RuleMatch, **more: Any) -> Approval:
    """`approval`, approved when it was asked by what `match` cites (a learned rule, an
    envelope): decided by Signoff itself, nothing left to remind of or wait for; `more`
    sets other fields too."""
    update = {
        "rule": match,
        "state": ApprovalState.APPROVED,
        "decided_by": SYSTEM_ACTOR,
        "decided_at": approval.created_at,
        "reason": match.summary,
        "deadline": None,
        "next_reminder_at": None,
    }
    return approval.model_copy(update=update | more)


class Policy(Settings):
    sensitive_results: tuple[str, ...] = ()
    """Fields of the tool's results nobody should read back: masked, at any depth, wherever
    a result is shown (the store keeps it whole, for the model and replay). A display
    setting: rules do not change it, and approvals do not keep it."""

    rules: tuple[Rule, ...] = ()
    """Ordered refinements by the call's arguments and run (`runtime.approvals.rules`); first
    match wins."""

    external: bool = False
    """The policy of a tool no agent of this runtime has: one asked for only over the HTTP
    API (an agent on another stack, the MCP proxy). Says that the name is meant, so start-up
    does not take it for a typo of a loaded tool's name. Checking only: approvals do not
    keep it, and it decides nothing."""


class Policies(BaseModel):
    """The default policy and per-tool overrides of it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    default: Policy = Policy()
    tools: dict[str, Policy] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _default_is_for_every_tool(self) -> Policies:
        if self.default.external:
            raise ValueError(
                "default.external: only a tool's policy is external (asked for over the "
                "HTTP API); the default policy is every tool's"
            )
        return self

    @model_validator(mode="after")
    def _escalations_name_someone(self) -> Policies:
        for name in ["default", *self.tools]:
            policy = self.default if name == "default" else self.for_tool(name)[1]
            for label, each in [(f"policy {name!r}", policy), *_under_rules(name, policy)]:
                if each.on_timeout == "escalate" and not each.escalate_to:
                    raise ValueError(
                        f"{label}: on_timeout = 'escalate' needs escalate_to (a user or "
                        "user group to escalate to); otherwise the approval waits unseen"
                    )
        return self

    def sensitive_results(self, tool: str) -> tuple[str, ...]:
        """The result fields masked for a tool: the default policy's and its own."""
        own = self.tools[tool].sensitive_results if tool in self.tools else ()
        return tuple(dict.fromkeys([*self.default.sensitive_results, *own]))

    def for_tool(self, tool: str) -> tuple[str, Policy]:
        """The policy's name and the policy for a tool: its override merged over the default."""
        override = self.tools.get(tool)
        if override is None:
            return "default", self.default
        merged = self.default.model_dump(exclude={"rules"}) | override.model_dump(
            exclude_unset=True, exclude={"rules"}
        )
        # Rules pass as they are (a dump would mark every setting of a rule as set); a tool
        # with no rules of its own has the default's.
        own = "rules" in override.model_fields_set
        return tool, Policy.model_validate(
            merged | {"rules": (override if own else self.default).rules}
        )


def under(policy: Policy, rule: Rule) -> Policy:
    """The policy a call is asked under when `rule` matched: the rule's settings over it."""
    return Policy.model_validate(policy.model_dump(exclude={"rules"}) | rule.overrides())


def _under_rules(name: str, policy: Policy) -> list[tuple[str, Policy]]:
    return [
        (f"policy {name!r} rule {n}", under(policy, rule))
        for n, rule in enumerate(policy.rules, start=1)
        if rule.asks
    ]


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
