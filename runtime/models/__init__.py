"""Hosted model adapters (optional extras) and their prices.

`OpenAIModel` and `AnthropicModel` import their provider's package only when first used, so
the core installs and starts without it: `pip install 'signoff[openai]'` or
`'signoff[anthropic]'`. The adapters themselves load on first use of their names, so reading
the configuration (`runtime.models.config`) does not load them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from runtime.exports import lazy

if TYPE_CHECKING:
    from runtime.models.anthropic import AnthropicModel
    from runtime.models.config import ModelConfig
    from runtime.models.config import configure as configure_models
    from runtime.models.openai import OpenAIModel
    from runtime.models.pricing import Price

__all__ = ["AnthropicModel", "ModelConfig", "OpenAIModel", "Price", "configure_models"]

_HOME = {
    "AnthropicModel": "runtime.models.anthropic",
    "configure_models": "runtime.models.config:configure",
    "ModelConfig": "runtime.models.config",
    "OpenAIModel": "runtime.models.openai",
    "Price": "runtime.models.pricing",
}

__getattr__, __dir__ = lazy(__name__, _HOME)
