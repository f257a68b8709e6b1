"""The agents a configuration names (`agents = ["module:attribute"]`), imported from their
paths, and what a rule of the configuration that does not fit them says. A command that only
checks the configuration (`signoff policy check`, `signoff dev`'s project) needs these and
none of the process `bot.wiring` assembles."""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from bot.settings import ConfigError, Settings, where
from runtime import Agent
from runtime.errors import RuleError

AGENTS_SETTING = "agents (SIGNOFF_AGENTS, or `agents` in signoff.toml)"


def load_agents(paths: Iterable[str]) -> list[Agent]:
    """Import agents from `module:attribute` paths; the attribute is an Agent or a list of them."""
    agents: list[Agent] = []
    for path in paths:
        module_name, _, attribute = path.partition(":")
        if not module_name or not attribute:
            raise ConfigError(f"{AGENTS_SETTING}: {path!r} is not a 'module:attribute' import path")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ConfigError(f"{AGENTS_SETTING}: cannot import {module_name!r}: {exc}") from None
        found = getattr(module, attribute, None)
        found = found if isinstance(found, list | tuple) else [found]
        if not found or not all(isinstance(agent, Agent) for agent in found):
            raise ConfigError(f"{AGENTS_SETTING}: {path!r} is not an Agent (or a list of Agents)")
        agents.extend(found)
    return agents


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
    from runtime.spend import check_limits, counted

    limits = settings.runtime.limits
    try:
        check_limits(limits, settings.runtime.policies, agents)
        check_rules(settings.runtime.policies, agents, counted(limits))
    except RuleError as exc:
        raise ConfigError(rule_error_text(settings, exc)) from None
