"""The OpenAI Agents SDK with Signoff as its approver: a real `Agent` whose tool has
`needs_approval=True`, on a scripted `Model` (no network, tracing off); interruptions become
Signoff approvals, the paused `RunState` is kept as text and resumed from it (as another
process would) with `approve` / `reject(rejection_message=...)`."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from agents import Agent, ModelResponse, Runner, Usage, function_tool, set_tracing_disabled
from agents.models.interface import Model
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from runtime import Policies, Policy
from signoff.adapters._gate import Gate
from signoff.adapters.openai_agents import resume_signed_off, run_signed_off

from .adapter_support import approve, approve_with, client_of, decline, human
from .helpers import Api

MakeApi = Callable[..., Awaitable[Api]]


@pytest.fixture(autouse=True)
def no_tracing() -> Iterator[None]:
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


def _kind(item: Any) -> str | None:
    return item.get("type") if isinstance(item, dict) else getattr(item, "type", None)


class Scripted(Model):
    """Calls `refund` until a tool output is in the input; then says what came back."""

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kw: Any
    ) -> ModelResponse:
        items = input if isinstance(input, list) else []
        outputs = [item for item in items if _kind(item) == "function_call_output"]
        if not outputs:
            call = ResponseFunctionToolCall(
                arguments=json.dumps({"order": "4471", "cents": 500}),
                call_id="call_1",
                name="refund",
                type="function_call",
                id="fc_1",
                status="completed",
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        last = outputs[-1]
        said = last["output"] if isinstance(last, dict) else last.output
        text = ResponseOutputText(annotations=[], text=f"outcome: {said}", type="output_text")
        message = ResponseOutputMessage(
            id="m1", content=[text], role="assistant", status="completed", type="message"
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kw: Any) -> Any:
        raise NotImplementedError


def refund_agent(done: list[tuple[str, int]]) -> Agent[Any]:
    @function_tool(needs_approval=True)
    def refund(order: str, cents: int) -> str:
        """Refund an order."""
        done.append((order, cents))
        return f"refunded {cents} on {order}"

    return Agent(name="refunds", instructions="Refund orders.", tools=[refund], model=Scripted())


@pytest.fixture
async def api(make_api: MakeApi) -> Api:
    return await make_api(policies=Policies(default=Policy(allow_edit=True)))


async def test_an_approved_call_runs_and_the_paused_state_was_handed_out(api: Api) -> None:
    done: list[tuple[str, int]] = []
    kept: list[tuple[str, str]] = []

    async def keep(run_key: str, state: str) -> None:
        kept.append((run_key, state))

    async with client_of(api) as signoff, human(api, approve) as decided:
        result = await run_signed_off(
            refund_agent(done), "Refund 4471", gate=Gate(signoff), run_key="r1", on_pause=keep
        )
    assert result.final_output == "outcome: refunded 500 on 4471"
    assert done == [("4471", 500)]
    [approval] = decided
    assert (approval.id, approval.tool, approval.args) == (
        "oa_r1:call_1",
        "refund",
        {"order": "4471", "cents": 500},
    )
    assert [key for key, _ in kept] == ["r1"]


async def test_a_declined_call_never_runs_and_the_model_reads_why(api: Api) -> None:
    done: list[tuple[str, int]] = []
    async with client_of(api) as signoff, human(api, decline("fraud risk")):
        result = await run_signed_off(
            refund_agent(done), "Refund 4471", gate=Gate(signoff), run_key="r1"
        )
    assert "declined refund: fraud risk" in result.final_output
    assert done == []


async def test_an_edit_is_a_rejection_naming_the_approved_arguments(api: Api) -> None:
    done: list[tuple[str, int]] = []
    async with client_of(api) as signoff, human(api, approve_with(cents=50)):
        result = await run_signed_off(
            refund_agent(done), "Refund 4471", gate=Gate(signoff), run_key="r1"
        )
    assert "only with these arguments" in result.final_output
    assert "'cents': 50" in result.final_output
    assert done == []


async def test_a_run_paused_in_one_process_resumes_in_another_from_its_text(api: Api) -> None:
    done: list[tuple[str, int]] = []
    paused = await Runner.run(refund_agent(done), "Refund 4471")
    text = paused.to_state().to_string()
    async with client_of(api) as signoff:
        timed_out = await resume_signed_off(
            refund_agent(done), text, gate=Gate(signoff, timeout=0.3), run_key="r1"
        )
        assert "nobody approved refund in time" in timed_out.final_output
        assert done == []
    done_later: list[tuple[str, int]] = []
    paused = await Runner.run(refund_agent(done_later), "Refund 4471")
    text = paused.to_state().to_string()
    async with client_of(api) as signoff, human(api, approve):
        result = await resume_signed_off(
            refund_agent(done_later), text, gate=Gate(signoff), run_key="r2"
        )
    assert result.final_output == "outcome: refunded 500 on 4471"
    assert done_later == [("4471", 500)]
