"""Putting a process together from settings: the database, the agents, the runtime.

Server-only dependencies (aiohttp for callbacks, slack_sdk for user groups) are imported
only when the process uses them, so a CLI command that never sends a callback or asks
Slack does not pay for loading them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING
from typing import Any

from bot.agents import check_configured_rules
from bot.agents import load_agents
from bot.callback_policy import CallbackPolicy
from bot.config_digest import config_digest
from bot.settings import ConfigError
from bot.settings import Settings
from bot.settings import secret
from bot.signing_keys import load_signer
from bot.tasks import Background
from runtime import Access
from runtime import Agent
from runtime import Database
from runtime import Directory
from runtime import FanOut
from runtime import Notifier
from runtime import NullNotifier
from runtime import Runtime
from runtime.deliveries import Deliveries
from runtime.errors import DefinitionError
from runtime.models import configure_models
from runtime.records import Approval
from runtime.records import Run
from runtime.runs import Telemetry
from runtime.signing import Signer

if TYPE_CHECKING:
    from bot.callbacks import CallbackNotifier


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

    async def close(self, *, grace: float = 10.0) -> None:
        """Let callbacks and resumed runs finish for `grace` seconds (they are durable
        either way), then close."""
        await self.background.drain(grace)
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
    create_key: bool = False,
) -> Process:
    """The store, the agents and the runtime, telling `notifier` and the HTTP callbacks and
    reporting to `telemetry`.

    A `short_lived` process (one CLI command) tries each decision callback once, briefly,
    and leaves the ones it could not deliver to the server. Without agents (a command that
    only reads) the configured agent modules are not imported. The signing key is loaded
    before the store is opened: a key file that cannot be used stops start-up having changed
    nothing (`create_key`: `serve` makes one when none is configured).
    """
    agents = load_agents(settings.runtime.agents, settings=settings) if with_agents else []
    try:
        agents = (
            configure_models(agents, settings.runtime.models, settings.runtime.prices)
            if agents
            else agents
        )
    except (DefinitionError, ImportError, ValueError) as exc:
        raise ConfigError(f"models: {exc}") from None
    check_configured_rules(settings, agents)  # before the store is opened: changes nothing
    signer = load_signer(settings, create=create_key)
    database = await Database.open(settings.database.url, **settings.database.store_options())
    background = Background()
    quick = {"attempts": 1, "timeout": 3.0, "hand_over": True} if short_lived else {}
    policy = CallbackPolicy(settings.api.callback_allowed_hosts)
    signing = callback_secret(settings)
    callbacks = Callbacks(database.deliveries, signing, background, policy=policy, **quick)
    told = FanOut([notifier or NullNotifier(), callbacks])
    runtime = _runtime(settings, database, agents, told, telemetry, signer)
    return Process(settings, database, runtime, background, callbacks)


def _runtime(
    settings: Settings,
    database: Database,
    agents: list[Agent],
    notifier: Notifier,
    telemetry: Telemetry | None,
    signer: Signer | None,
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
        config_digest=config_digest(settings),
        signer=signer,
        access=Access.of(settings.slack.readers, settings.slack.page_resolvers),
    )


def slack_directory(settings: Settings) -> Directory | None:
    """Slack user groups for approver checks, when a bot token is configured."""
    token = secret(settings.slack.bot_token)
    if not token:
        return None
    from bot.directory import SlackDirectory
    from bot.directory import web_client

    return SlackDirectory(web_client(token, base_url=settings.slack.api_url))


def callback_secret(settings: Settings) -> str:
    return secret(settings.api.callback_secret) or secret(settings.api.token) or ""
