"""Policies as the bot loads them: every approver is a Slack user id (`U…`/`W…`), a
user-group id (`S…`), the ids the bot's directory (Slack) knows, or the e-mail address of
a person outside Slack (asked by e-mail, deciding on the approvals page). The runtime's own models
ask only for one-word ids; these subclasses add Slack's format, so a mistyped approver is
refused at start-up at the line that names it."""

from __future__ import annotations

import re
from typing import Annotated
from typing import Any

from pydantic import AfterValidator
from pydantic import Field
from pydantic import model_validator

from runtime.approvals import LearnedRulesConfig
from runtime.approvals import Policies
from runtime.approvals import Policy
from runtime.approvals import Rule

SLACK_APPROVER = re.compile(r"[UWS][A-Z0-9]{2,}")
EMAIL_APPROVER = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
"""A person outside Slack, named by address: asked by e-mail (`bot.approvers.mail`)."""
SLACK_USER_ID = r"[UW][A-Z0-9]{2,}"
"""A person, as decisions name them (the CLI's `--by`, the API's `by`)."""
CHANNEL_ID = re.compile(r"[CG][A-Z0-9]{2,}")
"""A channel as Slack answers for it (`chat.update` and `conversations.history` take only
ids; `#name` works only for posting)."""


def slack_ids(approvers: tuple[str, ...]) -> tuple[str, ...]:
    for who in approvers:
        if not SLACK_APPROVER.fullmatch(who) and not EMAIL_APPROVER.fullmatch(who):
            raise ValueError(
                f"{who!r} is not a Slack user id (U…/W…), user-group id (S…) or e-mail address"
            )
    return tuple(who.lower() if "@" in who else who for who in approvers)


SlackApprovers = Annotated[tuple[str, ...], AfterValidator(slack_ids)]


class SlackRule(Rule):
    approvers: SlackApprovers = ()


class SlackPolicy(Policy):
    approvers: SlackApprovers = ()
    rules: tuple[SlackRule, ...] = ()


class SlackPolicies(Policies):
    default: SlackPolicy = SlackPolicy()
    # Narrows the base's dict of policies to Slack-checked ones; dict is invariant, but
    # nothing stores a plain Policy into it after validation.
    tools: dict[str, SlackPolicy] = Field(default_factory=dict)  # type: ignore[assignment]

    @model_validator(mode="before")
    @classmethod
    def _from_runtime_policies(cls, data: Any) -> Any:
        """Policies built in code (`runtime.Policies`) are checked like those from a file."""
        if isinstance(data, Policies) and not isinstance(data, SlackPolicies):
            return data.model_dump(exclude_unset=True)
        return data


class SlackLearnedRules(LearnedRulesConfig):
    writers: SlackApprovers = ()


def named_channels(policies: Policies) -> list[tuple[tuple[str, ...], str]]:
    """Each channel the policies and their rules set, with where (`policies.tools.x.channel`)."""
    found: list[tuple[tuple[str, ...], str]] = []
    tables: list[tuple[tuple[str, ...], Policy]] = [(("policies", "default"), policies.default)]
    tables += [(("policies", "tools", tool), policy) for tool, policy in policies.tools.items()]
    for loc, policy in tables:
        if policy.channel:
            found.append(((*loc, "channel"), policy.channel))
        for number, rule in enumerate(policy.rules):
            if rule.channel:
                found.append(((*loc, "rules", str(number), "channel"), rule.channel))
    return found
