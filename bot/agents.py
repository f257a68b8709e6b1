"""The agents a configuration names (`agents = ["module:attribute"]`), imported from their
paths, and what a rule of the configuration that does not fit them says. A command that only
checks the configuration (`signoff policy check`, `signoff dev`'s project) needs these and
none of the process `bot.wiring` assembles."""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable
from types import ModuleType
from typing import Any

from bot.near import did_you_mean
from bot.near import near
from bot.policy_ids import CHANNEL_ID
from bot.policy_ids import named_channels
from bot.settings import ConfigError
from bot.settings import Settings
from bot.settings import where
from runtime import Agent
from runtime.errors import RuleError

VARIABLE = "SIGNOFF_AGENTS"
POLICIES_VARIABLE = "SIGNOFF_POLICIES"
AGENTS_SETTING = f"agents ({VARIABLE}, or `agents` in signoff.toml)"


def load_agents(paths: Iterable[str], *, settings: Settings | None = None) -> list[Agent]:
    """Import agents from `module:attribute` paths; the attribute is an Agent or a list of
    them. With the `settings` they came from, a refusal names the file and line (or the
    variable) that set them."""
    place = agents_place(settings) if settings is not None else AGENTS_SETTING
    agents: list[Agent] = []
    for path in paths:
        module_name, _, attribute = path.partition(":")
        if not module_name or not attribute:
            raise ConfigError(f"{place}: {path!r} is not a 'module:attribute' import path")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ConfigError(f"{place}: cannot import {module_name!r}: {exc}") from None
        found = getattr(module, attribute, None)
        found = found if isinstance(found, list | tuple) else [found]
        if not found or not all(isinstance(agent, Agent) for agent in found):
            raise ConfigError(f"{place}: {path!r}: {_not_an_agent(module, attribute)}")
        agents.extend(found)
    return agents


def agents_place(settings: Settings) -> str:
    """Where the agents were set: `signoff.toml:3: agents`, or the environment variable."""
    if VARIABLE in os.environ:
        return f"environment {VARIABLE}"
    return f"{where(settings, ('agents',))}: agents"


def _not_an_agent(module: ModuleType, attribute: str) -> str:
    """Why `module:attribute` is no agent, and the agent it may have meant."""
    agents = [name for name, value in vars(module).items() if _is_agents(value)]
    hint = did_you_mean(attribute, agents)
    if not hasattr(module, attribute):
        return f"{module.__name__} has no attribute {attribute}{hint}"
    return f"{module.__name__}.{attribute} is not an Agent (or a list of Agents){hint}"


def _is_agents(value: object) -> bool:
    found = value if isinstance(value, list | tuple) else [value]
    return bool(found) and all(isinstance(agent, Agent) for agent in found)


def rule_error_text(settings: Settings, exc: RuleError) -> str:
    """`signoff.toml:14: rule 2: issue_refund has no argument 'amount' (…)`, one line."""
    problems: list[tuple[tuple[str, ...], str]] = exc.details.get("problems", [])
    if not problems:
        return str(exc)
    (loc, text), more = problems[0], len(problems) - 1
    also = f" (and {more} more; `signoff policy check` lists them)" if more else ""
    return f"{where(settings, loc)}: {'.'.join(loc)}: {text}{also}"


def check_configured_rules(settings: Settings, agents: list[Agent]) -> None:
    """The rules and limits, checked against the agents' tools before any store is opened
    (or created): a bad rule or limit stops the command at its line and changes nothing."""
    from runtime.approvals import check_rules
    from runtime.spend import check_limits
    from runtime.spend import counted

    limits = settings.runtime.limits
    check_policy_tools(settings, agents)
    check_cool_off_tools(settings, agents)
    try:
        check_limits(limits, settings.runtime.policies, agents)
        check_rules(settings.runtime.policies, agents, counted(limits))
    except RuleError as exc:
        raise ConfigError(rule_error_text(settings, exc)) from None


def check_policy_tools(settings: Settings, agents: list[Agent]) -> None:
    """A policy named for a tool no loaded agent has, when a loaded tool's name is within a
    typo of it, would leave that tool under the default policy, silently: refused, at its
    line, with the name it is near. A policy meant for tools asked over the HTTP API says
    `external = true`; a name near no loaded tool is only warned about
    (`unguarded_warnings`)."""
    known = {name for agent in agents for name in agent.tools}
    for tool, policy in settings.runtime.policies.tools.items():
        if tool in known or policy.external:
            continue
        meant = near(tool, known)
        if meant is not None:
            raise ConfigError(
                f"{policy_place(settings, tool)}: no loaded agent has a tool {tool!r}; did you "
                f"mean `{meant}`? (a policy for a tool asked for only over the HTTP API says "
                "external = true)"
            )


UNDOABLE = ("cool_off", "undo_for")


def check_cool_off_tools(settings: Settings, agents: list[Agent]) -> None:
    """`cool_off` and `undo_for` (issue 42.6) wait on, or undo, a call through its tool's
    compensator: set on a tool that has none, or on the default policy (every tool's), they
    would promise what nothing can do, so start-up stops at their line."""
    policies = settings.runtime.policies
    tools = {name: t for agent in agents for name, t in agent.tools.items()}
    named: list[tuple[tuple[str, ...], str | None]] = [(("policies", "default"), None)]
    named += [(("policies", "tools", name), name) for name in policies.tools]
    for loc, tool_name in named:
        policy = policies.default if tool_name is None else policies.tools[tool_name]
        for rule_loc in _undo_settings(policy, loc):
            tool = tools.get(tool_name or "")
            if tool_name is not None and (tool is None or tool.compensate is not None):
                continue  # no agent here has it: asked over the HTTP API, no run ever waits on it
            why = (
                "the default policy is every tool's; set it on the policy of a tool that "
                "has a compensator"
                if tool_name is None
                else f"{tool_name} has no compensator (a reversible tool names one with "
                "compensate=), so nothing could undo it"
            )
            raise ConfigError(f"{where(settings, rule_loc)}: {'.'.join(rule_loc)}: {why}")


def _undo_settings(policy: Any, loc: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Where the policy and its rules set a cool-off or an undo window."""
    found = [(*loc, key) for key in UNDOABLE if getattr(policy, key) is not None]
    for number, rule in enumerate(policy.rules):
        place = (*loc, "rules", str(number))
        found += [(*place, key) for key in UNDOABLE if getattr(rule, key) is not None]
    return found


def unguarded_warnings(settings: Settings, agents: Iterable[Agent]) -> list[str]:
    """Policies for a tool no loaded agent has, near none of theirs, not marked external:
    each may be meant for the HTTP API, or may guard nothing."""
    known = {name for agent in agents for name in agent.tools}
    return [
        f"{policy_place(settings, tool)}: no loaded agent has a tool {tool!r}; if only the "
        "HTTP API asks for it, say external = true (else this policy guards nothing)"
        for tool, policy in settings.runtime.policies.tools.items()
        if tool not in known and not policy.external
    ]


def policy_place(settings: Settings, tool: str) -> str:
    """`signoff.toml:12: policies.tools.delete_custmer`, or the environment variable."""
    if POLICIES_VARIABLE in os.environ:
        return f"environment {POLICIES_VARIABLE}: policies.tools.{tool}"
    loc = ("policies", "tools", tool)
    return f"{where(settings, loc)}: {'.'.join(loc)}"


def check_channel_ids(settings: Settings) -> None:
    """A policy's channel given by name (`#refunds`) is refused at its line, as `signoff
    serve` refuses it once Slack is asked (`bot.slack.channels`): cards are updated and found
    by channel id, so a name would fail card by card later. For the commands that never ask
    Slack (`signoff dev`, `signoff policy check`)."""
    for loc, channel in named_channels(settings.runtime.policies):
        if not CHANNEL_ID.fullmatch(channel):
            place = (
                f"environment {POLICIES_VARIABLE}"
                if POLICIES_VARIABLE in os.environ
                else where(settings, loc)
            )
            raise ConfigError(
                f"{place}: {'.'.join(loc)} {channel!r} is a channel name; Signoff needs the "
                "channel's id (C…, in Slack: the channel's details, at the bottom), as "
                "`signoff serve` does"
            )
