"""Hosted model adapters (optional extras) and their prices.

`OpenAIModel` and `AnthropicModel` import their provider's package only when first used, so
the core installs and starts without it: `pip install 'signoff[openai]'` or
`'signoff[anthropic]'`.
"""

from runtime.models.anthropic import AnthropicModel
from runtime.models.openai import OpenAIModel
from runtime.models.pricing import Price

__all__ = ["AnthropicModel", "OpenAIModel", "Price"]
