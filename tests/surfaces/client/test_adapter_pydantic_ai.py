"""pydantic-ai with Signoff as its approver: a real `Agent` on a scripted `FunctionModel`
(no network) whose tool `requires_approval`; `DeferredToolRequests` become Signoff
approvals and the decisions come back as `True`, `ToolApproved(override_args)` or
`ToolDenied(reason)`."""

from __future__ import annotations

from collections.abc import Awaitable
from collections.abc import Callable
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai import DeferredToolRequests
from pydantic_ai.models.function import FunctionModel
from support.adapter_support import approve
from support.adapter_support import approve_with
from support.adapter_support import client_of
from support.adapter_support import decline
from support.adapter_support import human
from support.helpers import Api

from examples.stacks.pydantic_ai import script  # refund_order 4471 for 2500 once, then tell
from runtime import Policies
from runtime import Policy
from signoff.adapters._gate import Gate
from signoff.adapters.pydantic_ai import run_signed_off
from signoff.adapters.pydantic_ai import sign_off

MakeApi = Callable[..., Awaitable[Api]]


def refund_agent(done: list[dict[str, Any]]) -> Agent[None, str | DeferredToolRequests]:
    agent = Agent(FunctionModel(script), output_type=[str, DeferredToolRequests])

    @agent.tool_plain(requires_approval=True)
    def refund_order(order_id: str, cents: int) -> str:
        done.append({"order_id": order_id, "cents": cents})
        return f"refunded {cents} on {order_id}"

    return agent


@pytest.fixture
async def api(make_api: MakeApi) -> Api:
    return await make_api(policies=Policies(default=Policy(allow_edit=True)))


async def test_an_approved_call_runs_as_proposed(api: Api) -> None:
    done: list[dict[str, Any]] = []
    async with client_of(api) as signoff, human(api, approve) as decided:
        result = await run_signed_off(refund_agent(done), "Refund 4471", gate=Gate(signoff))
    assert result.output == "Done. The tool said: refunded 2500 on 4471"
    assert done == [{"order_id": "4471", "cents": 2500}]
    [approval] = decided
    assert (approval.tool, approval.args) == ("refund_order", {"order_id": "4471", "cents": 2500})


async def test_an_edited_approval_runs_with_the_edited_arguments(api: Api) -> None:
    done: list[dict[str, Any]] = []
    async with client_of(api) as signoff, human(api, approve_with(cents=50)):
        result = await run_signed_off(refund_agent(done), "Refund 4471", gate=Gate(signoff))
    assert result.output == "Done. The tool said: refunded 50 on 4471"
    assert done == [{"order_id": "4471", "cents": 50}]


async def test_a_declined_call_never_runs_and_the_model_reads_why(api: Api) -> None:
    done: list[dict[str, Any]] = []
    async with client_of(api) as signoff, human(api, decline("fraud risk")):
        result = await run_signed_off(refund_agent(done), "Refund 4471", gate=Gate(signoff))
    assert "declined refund_order: fraud risk" in result.output
    assert done == []


async def test_nobody_deciding_in_time_is_a_denial(api: Api) -> None:
    done: list[dict[str, Any]] = []
    agent = refund_agent(done)
    async with client_of(api) as signoff:
        paused = await agent.run("Refund 4471")
        assert isinstance(paused.output, DeferredToolRequests)
        results = await sign_off(paused.output, Gate(signoff, timeout=0.3), run_key="r1")
        [answer] = results.approvals.values()
        assert answer.kind == "tool-denied"
        resumed = await agent.run(
            message_history=paused.all_messages(), deferred_tool_results=results
        )
    assert "nobody approved refund_order in time" in resumed.output
    assert done == []
    [pending] = await api.rt.approvals(state="pending")
    assert pending.id.startswith("pai_r1")
