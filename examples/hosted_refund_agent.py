"""The refund agent on a hosted model: the tools of `examples.refund_agent`, a prompt, a model.

    OPENAI_API_KEY=... SIGNOFF_AGENTS=examples.hosted_refund_agent:agent signoff runs start \
        refund-agent "Refund order 4471"          # SIGNOFF_MODEL_PROVIDER=anthropic for Claude
"""

import os

from examples.refund_agent import charge, issue_refund, lookup_order, reverse_refund, send_email
from runtime import Agent, Budget
from runtime.models import AnthropicModel, OpenAIModel

PROMPT = """You handle refund requests. Look the order up, then refund its full amount with
issue_refund, proposing the order's restocking fee (a human approves or declines the refund).
If it was refunded and the fee is not 0, charge that fee on the order's invoice. E-mail the
customer what happened, then answer in one sentence. Never retry a declined call."""

claude = os.environ.get("SIGNOFF_MODEL_PROVIDER") == "anthropic"
agent = Agent(
    "refund-agent",
    model=AnthropicModel("claude-sonnet-5") if claude else OpenAIModel("gpt-5.5", timeout=60),
    tools=[lookup_order, issue_refund, reverse_refund, charge, send_email],
    system_prompt=PROMPT,
    budget=Budget(max_steps=12, max_cost=0.50),  # cost from [prices] in signoff.toml
)
