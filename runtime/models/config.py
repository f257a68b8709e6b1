"""Models chosen in configuration: `[models.<agent>]` and `[prices."<model>"]` in signoff.toml.

Building a configured model imports its provider's package then, not before, so a process
whose agents use no hosted model never needs one installed (and one that does learns of a
missing package at start-up).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from collections.abc import Mapping
from typing import TYPE_CHECKING
from typing import Literal

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field

from runtime.errors import DefinitionError
from runtime.models.pricing import Price
from runtime.models.timeouts import DEFAULT_MAX_RETRIES
from runtime.models.timeouts import DEFAULT_TIMEOUT

if TYPE_CHECKING:  # the adapters load with the first configured model: settings need none
    from runtime.agent import Agent
    from runtime.model import Model

log = logging.getLogger("signoff.models")


class ModelConfig(BaseModel):
    """One agent's model. The key is read from the provider's usual environment variable
    (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`), never from this file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: Literal["openai", "anthropic"]
    model: str = Field(min_length=1)
    base_url: str | None = None
    timeout: float = Field(DEFAULT_TIMEOUT, gt=0)
    """Seconds for one HTTP attempt; the SDK retries a timed-out attempt like a 5xx."""
    max_retries: int = Field(DEFAULT_MAX_RETRIES, ge=0)
    max_tokens: int | None = Field(None, ge=1)


def build(config: ModelConfig, prices: Mapping[str, Price]) -> Model:
    from runtime.models.anthropic import AnthropicModel
    from runtime.models.hosted import HostedModel
    from runtime.models.openai import OpenAIModel

    kind: type[HostedModel] = OpenAIModel if config.provider == "openai" else AnthropicModel
    model = kind(
        config.model,
        base_url=config.base_url,
        timeout=config.timeout,
        max_retries=config.max_retries,
        max_tokens=config.max_tokens,
        price=prices.get(config.model),
    )
    _ = model.sdk  # a missing package is a start-up error, not the first run's
    return model


def configure(
    agents: Iterable[Agent], models: Mapping[str, ModelConfig], prices: Mapping[str, Price]
) -> list[Agent]:
    """The agents, each on the model configured for it by name; a hosted model given in code
    without a price takes the configured one."""
    from runtime.models.hosted import HostedModel

    agents = list(agents)
    unknown = set(models) - {a.name for a in agents}
    if unknown:
        known = ", ".join(a.name for a in agents) or "none"
        raise DefinitionError(
            f"models are configured for {sorted(unknown)}, which are not agents here ({known})"
        )
    configured = [_configured(a, models, prices) for a in agents]
    for agent in configured:
        model = agent.model
        if isinstance(model, HostedModel):
            model.check()
        if (
            isinstance(model, HostedModel)
            and model.price is None
            and agent.budget.max_cost is not None
        ):
            log.warning(
                "agent %s has a cost budget but no price for %s: add [prices.%r] to "
                "signoff.toml, or its runs count no cost",
                agent.name,
                model.model,
                model.model,
            )
    return configured


def _configured(
    agent: Agent, models: Mapping[str, ModelConfig], prices: Mapping[str, Price]
) -> Agent:
    from runtime.models.hosted import HostedModel

    if agent.name in models:
        return agent.with_model(build(models[agent.name], prices))
    model = agent.model
    if isinstance(model, HostedModel) and model.price is None and model.model in prices:
        return agent.with_model(model.priced(prices[model.model]))
    return agent
