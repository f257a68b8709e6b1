"""Which project `signoff dev` runs: the `signoff.toml` in the working directory (or the one
`--config` or SIGNOFF_CONFIG names), read by the loader `serve` and `run` use, or, without
one, the demo (the refund agent, bob approves).

Only the file's agents, policies, approval rules, models and prices count here: the database,
the API, Slack and the workers are the dev process's own. The file's folder is put on the
import path (`bot.settings.import_from`, as for every command), so an agent module beside it
imports without PYTHONPATH.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from bot.agents import check_channel_ids
from bot.agents import check_configured_rules
from bot.agents import load_agents
from bot.dev import people
from bot.policy_ids import SlackLearnedRules
from bot.policy_ids import SlackPolicies
from bot.policy_ids import SlackPolicy
from bot.sections import RuntimeSettings
from bot.settings import config_path
from bot.settings import load_settings
from runtime.agent import Agent
from runtime.approvals import Policy

REFUND_AGENT = "examples.refund_agent:agent"


@dataclass(frozen=True)
class Project:
    runtime: RuntimeSettings
    config: Path | None = None
    """The signoff.toml read; None: the demo."""
    agents: tuple[tuple[str, Agent], ...] = ()
    """Each agent with the import path it came from."""

    @property
    def demo(self) -> bool:
        return self.config is None

    def cli_environment(self) -> dict[str, str]:
        """What the CLI in another terminal needs to decide as this project would: its
        signoff.toml, or the demo's policies (else the CLI's own defaults would let anyone
        but the requester approve)."""
        if self.config is not None:
            return {"SIGNOFF_CONFIG": str(self.config)}
        return {
            "SIGNOFF_POLICIES": self.runtime.policies.model_dump_json(exclude_defaults=True),
            "SIGNOFF_LEARNED_RULES": self.runtime.learned_rules.model_dump_json(
                exclude_defaults=True
            ),
        }

    def channels(self) -> set[str]:
        """The channels its policies post in (the dev workspace gets each of them)."""
        return {p.channel for p in _every_policy(self.runtime.policies) if p.channel}

    def named_users(self) -> list[str]:
        """The people its policies and rule writers name (each one someone the page plays)."""
        named = [*self._named(), *self.runtime.learned_rules.writers]
        return list(dict.fromkeys(who for who in named if not who.startswith("S")))

    def user_groups(self) -> dict[str, list[str]]:
        """Each user group it names, with bob as its member (so bob can decide for it)."""
        named = [*self._named(), *self.runtime.learned_rules.writers]
        return {group: [people.APPROVER] for group in named if group.startswith("S")}

    def _named(self) -> list[str]:
        found: list[str] = []
        for policy in _every_policy(self.runtime.policies):
            found += [*policy.approvers, *([policy.escalate_to] if policy.escalate_to else [])]
        return found

    def lines(self) -> list[str]:
        """What it loaded, one line each, for the terminal and the page."""
        if self.demo:
            return ["no signoff.toml here: the demo (the refund agent; bob approves)"]
        told = [f"project {self.config}"]
        told += [f"agent {agent.name} ({path})" for path, agent in self.agents]
        policies = self.runtime.policies
        told.append(f"policy default: {_asks(policies.default)}")
        told += [f"policy {tool}: {_asks(policies.for_tool(tool)[1])}" for tool in policies.tools]
        return told


def find(explicit: str | None) -> Project:
    """The project of this folder (or the file named), its agents imported and its rules
    checked against them, so a mistake stops `signoff dev` before anything starts."""
    named = explicit or os.environ.get("SIGNOFF_CONFIG")
    file = config_path(explicit)
    if not named and not file.exists():
        return demo()
    settings = load_settings(explicit)  # which also puts the file's folder on the import path
    found = tuple(
        (path, agent)
        for path in settings.runtime.agents
        for agent in load_agents([path], settings=settings)
    )
    check_configured_rules(settings, [agent for _, agent in found])
    check_channel_ids(settings)
    return Project(settings.runtime, file.resolve(), found)


def demo() -> Project:
    """The refund agent (with any agents SIGNOFF_AGENTS adds), and one approver, bob, who may
    edit, and write approval rules (so cards show "Approve + similar…")."""
    extra = [a.strip() for a in os.environ.get("SIGNOFF_AGENTS", "").split(",") if a.strip()]
    runtime = RuntimeSettings(
        agents=[REFUND_AGENT, *[a for a in extra if a != REFUND_AGENT]],
        policies=SlackPolicies(
            default=SlackPolicy(
                channel=people.APPROVALS, approvers=(people.APPROVER,), allow_edit=True
            )
        ),
        learned_rules=SlackLearnedRules(writers=(people.APPROVER,)),
    )
    return Project(runtime)


def _every_policy(policies: SlackPolicies) -> list[Policy]:
    """The default, each tool's, and each rule's routing (a rule may name its own channel)."""
    found: list[Policy] = [policies.default, *policies.tools.values()]
    rules = [rule for policy in list(found) for rule in policy.rules]
    found += [Policy.model_validate(rule.overrides()) for rule in rules if rule.asks]
    return found


def _asks(policy: Policy) -> str:
    who = ", ".join(policy.approvers) or "anyone but the requester"
    count = policy.required_approvals
    where = f" in {policy.channel}" if policy.channel else ""
    rules = f"; {len(policy.rules)} rule(s)" if policy.rules else ""
    return f"{count} approval{'s' if count > 1 else ''} from {who}{where}{rules}"
