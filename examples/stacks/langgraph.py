"""LangGraph (LangChain's create_agent + HumanInTheLoopMiddleware), gated:
`python -m examples.stacks.langgraph` (see the package doc)."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from signoff import AsyncClient
from signoff.adapters._gate import Gate
from signoff.adapters.langgraph import resume_when_decided

CALL = {"name": "refund_order", "args": {"order_id": "4471", "cents": 2500}, "id": "call_1"}


class Scripted(BaseChatModel):
    """The scripted model: reply k to a transcript with k model turns in it."""

    replies: list[AIMessage]

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **options: Any) -> Scripted:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kw: Any) -> ChatResult:
        turns = sum(isinstance(message, AIMessage) for message in messages)
        return ChatResult(generations=[ChatGeneration(message=self.replies[turns])])


@tool
def refund_order(order_id: str, cents: int) -> str:
    """Refund an order."""
    return f"refunded {cents} cents on order {order_id}"


model = Scripted(replies=[AIMessage(content="", tool_calls=[CALL]), AIMessage(content="Done.")])
graph = create_agent(
    model,
    [refund_order],
    middleware=[HumanInTheLoopMiddleware(interrupt_on={"refund_order": True})],
    checkpointer=InMemorySaver(),
)


async def main() -> None:
    config = {"configurable": {"thread_id": "refund-4471"}}
    await graph.ainvoke({"messages": [{"role": "user", "content": "Refund order 4471"}]}, config)
    print("LangGraph agent paused; approve refund_order in signoff dev", flush=True)
    async with AsyncClient() as signoff:
        values = await resume_when_decided(graph, config, Gate(signoff, timeout=600))
    for message in values["messages"][-2:]:
        print(f"{message.type}: {message.content}")


if __name__ == "__main__":
    asyncio.run(main())
