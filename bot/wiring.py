"""Putting a process together from settings: the store, the agents, the runtime."""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass

from bot.callbacks import CallbackNotifier
from bot.directory import SlackDirectory, web_client
from bot.settings import ConfigError, Settings, secret
from bot.tasks import Background
from runtime import Agent, FanOut, Notifier, NullNotifier, Runtime
from store import Store, open_store

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


@dataclass
class Process:
    settings: Settings
    store: Store
    runtime: Runtime
    background: Background
    callbacks: CallbackNotifier

    async def close(self) -> None:
        """Let callbacks and resumed runs finish (they are durable either way), then close."""
        await self.background.drain()
        await self.store.close()


async def assemble(
    settings: Settings, *, notifier: Notifier | None = None, short_lived: bool = False
) -> Process:
    """The store, the agents and the runtime, telling `notifier` and the HTTP callbacks.

    A `short_lived` process (one CLI command) tries each decision callback once, briefly,
    and leaves the ones it could not deliver to the server.
    """
    agents = load_agents(settings.agents)
    options = (
        {"synchronous": settings.synchronous} if settings.database_url.startswith("sqlite") else {}
    )
    store = await open_store(settings.database_url, **options)
    token = secret(settings.slack_bot_token)
    directory = (
        SlackDirectory(web_client(token, base_url=settings.slack_api_url)) if token else None
    )
    background = Background()
    quick = {"attempts": 1, "timeout": 3.0, "hand_over": True} if short_lived else {}
    callbacks = CallbackNotifier(store, callback_secret(settings), background, **quick)
    runtime = Runtime(
        store,
        agents,
        FanOut([notifier or NullNotifier(), callbacks]),
        policies=settings.policies,
        directory=directory,
        worker_id=settings.worker_id,
        lease_ttl=settings.lease_ttl,
        protected_facts=settings.protected_facts,
    )
    return Process(settings, store, runtime, background, callbacks)


def callback_secret(settings: Settings) -> str:
    return secret(settings.callback_secret) or secret(settings.api_token) or ""
