"""The OpenAI Agents SDK, gated: `python -m examples.stacks.openai_agents` (see the package
doc). Tracing is off: nothing leaves this machine."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agents import Agent, ModelResponse, Usage, function_tool, set_tracing_disabled
from agents.models.interface import Model
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from signoff import AsyncClient
from signoff.adapters._gate import Gate
from signoff.adapters.openai_agents import run_signed_off


def _kind(item: Any) -> str | None:
    return item.get("type") if isinstance(item, dict) else getattr(item, "type", None)


class Scripted(Model):
    """The scripted model: refund once, then report what the tool said."""

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kw: Any
    ) -> ModelResponse:
        outputs = [
            i
            for i in (input if isinstance(input, list) else [])
            if _kind(i) == "function_call_output"
        ]
        if not outputs:
            call = ResponseFunctionToolCall(
                arguments=json.dumps({"order_id": "4471", "cents": 2500}),
                call_id="call_1",
                name="refund_order",
                type="function_call",
                id="fc_1",
                status="completed",
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        last = outputs[-1]
        said = last["output"] if isinstance(last, dict) else last.output
        text = ResponseOutputText(
            annotations=[], text=f"Done. The tool said: {said}", type="output_text"
        )
        message = ResponseOutputMessage(
            id="m1", content=[text], role="assistant", status="completed", type="message"
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kw: Any) -> Any:
        raise NotImplementedError


@function_tool(needs_approval=True)
def refund_order(order_id: str, cents: int) -> str:
    """Refund an order."""
    return f"refunded {cents} cents on order {order_id}"


agent = Agent(name="refunds", instructions="Refund orders.", tools=[refund_order], model=Scripted())


async def main() -> None:
    set_tracing_disabled(True)
    print("OpenAI Agents SDK agent: approve refund_order in signoff dev", flush=True)
    async with AsyncClient() as signoff:
        result = await run_signed_off(
            agent, "Refund order 4471", gate=Gate(signoff, timeout=600), run_key="refund-4471"
        )
    print(result.final_output)


if __name__ == "__main__":
    asyncio.run(main())
