"""LangGraph / LangChain with Signoff as its reviewer: a real `create_agent` graph with
`HumanInTheLoopMiddleware` on a scripted chat model (no network), and a plain graph pausing
with `interrupt()` through `ask_signoff`; each resumed from the checkpointer once Signoff's
decisions land (by another graph instance, as another process would)."""

from __future__ import annotations

from collections.abc import Awaitable
from collections.abc import Callable
from typing import Any
from typing import TypedDict

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage
from langchain_core.messages import ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END
from langgraph.graph import START
from langgraph.graph import StateGraph
from support.adapter_support import approve
from support.adapter_support import approve_with
from support.adapter_support import client_of
from support.adapter_support import decline
from support.adapter_support import human
from support.helpers import Api

from examples.stacks.langgraph import Scripted  # reply k to a transcript of k model turns
from runtime import Policies
from runtime import Policy
from signoff.adapters._gate import Gate
from signoff.adapters.langgraph import ask_signoff
from signoff.adapters.langgraph import resume_when_decided

MakeApi = Callable[..., Awaitable[Api]]
CONFIG = {"configurable": {"thread_id": "thread-1"}}


def refund_graph(done: list[tuple[str, int]], saver: InMemorySaver, allowed: list[str]) -> Any:
    @tool
    def refund(order: str, cents: int) -> str:
        """Refund an order."""
        done.append((order, cents))
        return f"refunded {cents} on {order}"

    @tool
    def email(to: str) -> str:
        """Send an e-mail."""
        done.append((to, 0))
        return f"mailed {to}"

    calls = [
        {"name": "refund", "args": {"order": "4471", "cents": 500}, "id": "call_1"},
        {"name": "email", "args": {"to": "ann@example.test"}, "id": "call_2"},
    ]
    replies = [AIMessage(content="", tool_calls=calls), AIMessage(content="all done")]
    gated = {"refund": {"allowed_decisions": allowed}, "email": True}
    return create_agent(
        Scripted(replies=replies),
        [refund, email],
        middleware=[HumanInTheLoopMiddleware(interrupt_on=gated)],
        checkpointer=saver,
    )


@pytest.fixture
async def api(make_api: MakeApi) -> Api:
    return await make_api(policies=Policies(default=Policy(allow_edit=True)))


async def start(graph: Any) -> None:
    paused = await graph.ainvoke({"messages": [{"role": "user", "content": "refund"}]}, CONFIG)
    [pending] = paused["__interrupt__"]
    assert [a["name"] for a in pending.value["action_requests"]] == ["refund", "email"]


def tool_texts(values: dict[str, Any]) -> list[str]:
    return [str(m.content) for m in values["messages"] if isinstance(m, ToolMessage)]


async def test_a_batch_becomes_one_approval_per_call_and_resumes_from_the_checkpointer(
    api: Api,
) -> None:
    saver, done = InMemorySaver(), []
    await start(refund_graph(done, saver, ["approve", "edit", "reject"]))
    assert done == []
    elsewhere = refund_graph(done, saver, ["approve", "edit", "reject"])  # another process
    async with client_of(api) as signoff, human(api, approve) as decided:
        values = await resume_when_decided(elsewhere, CONFIG, Gate(signoff))
    assert [a.tool for a in decided] == ["refund", "email"]
    assert done == [("4471", 500), ("ann@example.test", 0)]
    assert values["messages"][-1].content == "all done"


async def test_edits_and_rejections_map_to_the_middlewares_decisions(api: Api) -> None:
    saver, done = InMemorySaver(), []
    graph = refund_graph(done, saver, ["approve", "edit", "reject"])
    await start(graph)

    def choose(approval: Any) -> tuple[str, dict[str, Any]]:
        if approval.tool == "refund":
            return approve_with(cents=50)(approval)
        return decline("no spam")(approval)

    async with client_of(api) as signoff, human(api, choose):
        values = await resume_when_decided(graph, CONFIG, Gate(signoff))
    assert done == [("4471", 50)]
    texts = tool_texts(values)
    assert any("refunded 50 on 4471" in t for t in texts)
    assert any("declined email: no spam" in t for t in texts)


async def test_an_edit_the_review_config_forbids_is_a_rejection(api: Api) -> None:
    saver, done = InMemorySaver(), []
    graph = refund_graph(done, saver, ["approve", "reject"])
    await start(graph)
    async with client_of(api) as signoff, human(api, approve_with(cents=1)):
        values = await resume_when_decided(graph, CONFIG, Gate(signoff))
    assert done == [("ann@example.test", 0)]  # the email had nothing to edit: approved
    assert any("does not allow edits" in t for t in tool_texts(values))


class Transfer(TypedDict, total=False):
    amount: int
    outcome: str


def transfer_graph(saver: InMemorySaver, done: list[int]) -> Any:
    def gate(state: Transfer) -> Transfer:
        answer = ask_signoff("transfer", {"amount": state["amount"]})
        if not answer["approved"]:
            return {"outcome": answer["reason"]}
        done.append(answer["args"]["amount"])
        return {"outcome": f"sent {answer['args']['amount']}"}

    builder = StateGraph(Transfer)
    builder.add_node("gate", gate)
    builder.add_edge(START, "gate")
    builder.add_edge("gate", END)
    return builder.compile(checkpointer=saver)


async def test_a_plain_interrupt_graph_pauses_through_ask_signoff(api: Api) -> None:
    saver, done = InMemorySaver(), []
    graph = transfer_graph(saver, done)
    paused = await graph.ainvoke({"amount": 900}, CONFIG)
    assert "__interrupt__" in paused
    async with client_of(api) as signoff, human(api, approve_with(amount=90)):
        values = await resume_when_decided(graph, CONFIG, Gate(signoff))
    assert (values["outcome"], done) == ("sent 90", [90])


async def test_a_plain_interrupt_nobody_decides_is_not_acted_on(api: Api) -> None:
    saver, done = InMemorySaver(), []
    graph = transfer_graph(saver, done)
    await graph.ainvoke({"amount": 900}, CONFIG)
    async with client_of(api) as signoff:
        values = await resume_when_decided(graph, CONFIG, Gate(signoff, timeout=0.3))
    assert "nobody approved transfer in time" in values["outcome"]
    assert done == []
