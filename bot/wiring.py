"""Putting a process together from settings: the database, the agents, the runtime.

Server-only dependencies (aiohttp for callbacks, slack_sdk for user groups) are imported
only when the process uses them, so a CLI command that never sends a callback or asks
Slack does not pay for loading them.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from bot.callback_policy import CallbackPolicy
from bot.settings import ConfigError, Settings, secret, where
from bot.tasks import Background
from runtime import Agent, Database, Directory, FanOut, Notifier, NullNotifier, Runtime
from runtime.approvals.routing import check_rules
from runtime.deliveries import Deliveries
from runtime.errors import DefinitionError, RuleError
from runtime.models.config import configure
from runtime.records import Approval, Run
from runtime.runs.telemetry import Telemetry
from runtime.spend.checks import check_limits, counted

if TYPE_CHECKING:
    from bot.callbacks import CallbackNotifier

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


class Callbacks(NullNotifier):
    """The HTTP decision callbacks (`bot.callbacks`), loaded with their HTTP client on the
    first decision that has a callback URL, or the first redelivery."""

    def __init__(
        self, deliveries: Deliveries, secret: str, background: Background, **options: Any
    ) -> None:
        self._args = (deliveries, secret, background)
        self._options = options

    @cached_property
    def sender(self) -> CallbackNotifier:
        from bot.callbacks import CallbackNotifier

        return CallbackNotifier(*self._args, **self._options)

    async def approval_decided(self, approval: Approval, run: Run | None) -> None:
        if approval.callback_url:
            await self.sender.approval_decided(approval, run)

    async def redeliver(self, *, failed_too: bool = True) -> int:
        return await self.sender.redeliver(failed_too=failed_too)


@dataclass
class Process:
    settings: Settings
    database: Database
    runtime: Runtime
    background: Background
    callbacks: Callbacks

    async def close(self) -> None:
        """Let callbacks and resumed runs finish (they are durable either way), then close."""
        await self.background.drain()
        for agent in self.runtime.agents.values():
            close = getattr(agent.model, "close", None)  # a hosted model's HTTP client
            if close is not None:
                await close()
        await self.database.close()


async def assemble(
    settings: Settings,
    *,
    notifier: Notifier | None = None,
    telemetry: Telemetry | None = None,
    short_lived: bool = False,
    with_agents: bool = True,
) -> Process:
    """The store, the agents and the runtime, telling `notifier` and the HTTP callbacks and
    reporting to `telemetry`.

    A `short_lived` process (one CLI command) tries each decision callback once, briefly,
    and leaves the ones it could not deliver to the server. Without agents (a command that
    only reads) the configured agent modules are not imported.
    """
    agents = load_agents(settings.runtime.agents) if with_agents else []
    try:
        agents = (
            configure(agents, settings.runtime.models, settings.runtime.prices)
            if agents
            else agents
        )
    except (DefinitionError, ImportError, ValueError) as exc:
        raise ConfigError(f"models: {exc}") from None
    check_configured_rules(settings, agents)
    database = await Database.open(settings.database.url, **store_options(settings))
    background = Background()
    quick = {"attempts": 1, "timeout": 3.0, "hand_over": True} if short_lived else {}
    policy = CallbackPolicy(settings.api.callback_allowed_hosts)
    signing = callback_secret(settings)
    callbacks = Callbacks(database.deliveries, signing, background, policy=policy, **quick)
    told = FanOut([notifier or NullNotifier(), callbacks])
    runtime = _runtime(settings, database, agents, told, telemetry)
    return Process(settings, database, runtime, background, callbacks)


def check_configured_rules(settings: Settings, agents: list[Agent]) -> None:
    """The rules and limits, checked against the agents' tools before the store is opened
    (or created): a bad rule or limit stops the command at its line and changes nothing."""
    limits = settings.runtime.limits
    try:
        check_limits(limits, settings.runtime.policies, agents)
        check_rules(settings.runtime.policies, agents, counted(limits))
    except RuleError as exc:
        raise ConfigError(rule_error_text(settings, exc)) from None


def rule_error_text(settings: Settings, exc: RuleError) -> str:
    """`signoff.toml:14: rule 2: issue_refund has no argument 'amount' (…)`, one line."""
    problems: list[tuple[tuple[str, ...], str]] = exc.details.get("problems", [])
    if not problems:
        return str(exc)
    (loc, text), more = problems[0], len(problems) - 1
    also = f" (and {more} more; `signoff policy check` lists them)" if more else ""
    return f"{where(settings, loc)}: {'.'.join(loc)}: {text}{also}"


def _runtime(
    settings: Settings,
    database: Database,
    agents: list[Agent],
    notifier: Notifier,
    telemetry: Telemetry | None,
) -> Runtime:
    return database.runtime(
        agents,
        notifier,
        telemetry=telemetry,
        policies=settings.runtime.policies,
        learned_rules=settings.runtime.learned_rules,
        spend=settings.runtime.spend,
        directory=slack_directory(settings),
        worker_id=settings.workers.id,
        lease_ttl=settings.workers.lease_ttl,
        protected_facts=settings.runtime.protected_facts,
    )


def slack_directory(settings: Settings) -> Directory | None:
    """Slack user groups for approver checks, when a bot token is configured."""
    token = secret(settings.slack.bot_token)
    if not token:
        return None
    from bot.directory import SlackDirectory, web_client

    return SlackDirectory(web_client(token, base_url=settings.slack.api_url))


def callback_secret(settings: Settings) -> str:
    return secret(settings.api.callback_secret) or secret(settings.api.token) or ""


def store_options(settings: Settings) -> dict[str, Any]:
    """The settings that belong to the configured backend only."""
    if settings.database.url.startswith("sqlite"):
        return (
            {}
            if settings.database.synchronous is None
            else {"synchronous": settings.database.synchronous}
        )
    if settings.database.url.startswith(("postgres:", "postgresql:")):
        size = settings.database.pool_size
        return {} if size is None else {"pool_size": size}
    return {}
