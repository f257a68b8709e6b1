"""Putting a process together from settings: the store, the agents, the runtime."""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass

from bot.settings import ConfigError, Settings
from runtime import Agent, Notifier, Runtime
from store import Store, open_store


def load_agents(paths: Iterable[str]) -> list[Agent]:
    """Import agents from `module:attribute` paths; the attribute is an Agent or a list of them."""
    agents: list[Agent] = []
    for path in paths:
        module_name, _, attribute = path.partition(":")
        if not module_name or not attribute:
            raise ConfigError(f"agents: {path!r} is not a 'module:attribute' import path")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ConfigError(f"agents: cannot import {module_name!r}: {exc}") from None
        found = getattr(module, attribute, None)
        found = found if isinstance(found, list | tuple) else [found]
        if not found or not all(isinstance(agent, Agent) for agent in found):
            raise ConfigError(f"agents: {path!r} is not an Agent (or a list of Agents)")
        agents.extend(found)
    return agents


@dataclass
class Process:
    settings: Settings
    store: Store
    runtime: Runtime

    async def close(self) -> None:
        await self.store.close()


async def assemble(settings: Settings, *, notifier: Notifier | None = None) -> Process:
    agents = load_agents(settings.agents)
    options = (
        {"synchronous": settings.synchronous} if settings.database_url.startswith("sqlite") else {}
    )
    store = await open_store(settings.database_url, **options)
    runtime = Runtime(
        store,
        agents,
        notifier,
        policies=settings.policies,
        worker_id=settings.worker_id,
        lease_ttl=settings.lease_ttl,
        protected_facts=settings.protected_facts,
    )
    return Process(settings, store, runtime)
