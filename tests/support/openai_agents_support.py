"""A scripted model for the OpenAI Agents SDK adapter tests (no network), and `no_tracing`,
an autouse fixture a test module takes by importing it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from agents import ModelResponse
from agents import Usage
from agents import set_tracing_disabled
from agents.models.interface import Model
from openai.types.responses import ResponseFunctionToolCall
from openai.types.responses import ResponseOutputMessage
from openai.types.responses import ResponseOutputText


@pytest.fixture(autouse=True)
def no_tracing() -> Iterator[None]:
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


def _kind(item: Any) -> str | None:
    return item.get("type") if isinstance(item, dict) else getattr(item, "type", None)


class Calls(Model):
    """Calls `tool(**args)` until a tool output is in the input; then says what came back."""

    def __init__(self, tool: str, args: dict[str, Any]) -> None:
        self.tool, self.args = tool, args

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kw: Any
    ) -> ModelResponse:
        items = input if isinstance(input, list) else []
        outputs = [item for item in items if _kind(item) == "function_call_output"]
        if not outputs:
            call = ResponseFunctionToolCall(
                arguments=json.dumps(self.args),
                call_id="call_1",
                name=self.tool,
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
