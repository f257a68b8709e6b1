"""Hosted model adapters (optional extras) and their prices.

`OpenAIModel` and `AnthropicModel` import their provider's package only when first used, so
the core installs and starts without it: `pip install 'signoff[openai]'` or
`'signoff[anthropic]'`. The adapters themselves load on first use of their names, so reading
the configuration (`runtime.models.config`) does not load them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime.models.anthropic import AnthropicModel
    from runtime.models.openai import OpenAIModel
    from runtime.models.pricing import Price

__all__ = ["AnthropicModel", "OpenAIModel", "Price"]

_HOME = {
    "AnthropicModel": "runtime.models.anthropic",
    "OpenAIModel": "runtime.models.openai",
    "Price": "runtime.models.pricing",
}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use."""
    if name not in _HOME:
        raise AttributeError(f"module 'runtime.models' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME[name]), name)
    globals()[name] = value
    return value
