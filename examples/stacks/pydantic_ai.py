"""pydantic-ai, gated: `python -m examples.stacks.pydantic_ai` (see the package doc)."""

from __future__ import annotations

import asyncio

from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from signoff import AsyncClient
from signoff.adapters._gate import Gate
from signoff.adapters.pydantic_ai import run_signed_off


def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The scripted model: refund once, then report what the tool said."""
    returns = [
        part
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]
    if not returns:
        return ModelResponse(
            parts=[ToolCallPart("refund_order", {"order_id": "4471", "cents": 2500})]
        )
    return ModelResponse(parts=[TextPart(f"Done. The tool said: {returns[-1].content}")])


agent = Agent(FunctionModel(script), output_type=[str, DeferredToolRequests])


@agent.tool_plain(requires_approval=True)
def refund_order(order_id: str, cents: int) -> str:
    return f"refunded {cents} cents on order {order_id}"


async def main() -> None:
    print("pydantic-ai agent: asking Signoff to refund 4471; approve it in signoff dev", flush=True)
    async with AsyncClient() as signoff:
        result = await run_signed_off(agent, "Refund order 4471", gate=Gate(signoff, timeout=600))
    print(result.output)


if __name__ == "__main__":
    asyncio.run(main())
