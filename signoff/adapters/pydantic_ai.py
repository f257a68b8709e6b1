"""pydantic-ai: tools that need approval (`requires_approval=True`, or `ApprovalRequired`
raised) end a run with `DeferredToolRequests`; `sign_off` asks Signoff about each call and
answers with `DeferredToolResults` - `True` (approved as proposed), `ToolApproved(
override_args=...)` (approved with edited arguments) or `ToolDenied(reason)` (declined, or
nobody decided in time). `run_signed_off` runs an agent to its end, signing off each pause.

    from signoff.adapters.pydantic_ai import run_signed_off
    result = await run_signed_off(agent, "Refund order 4471", gate=Gate(AsyncClient()))
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import DeferredToolRequests
from pydantic_ai import DeferredToolResults
from pydantic_ai import ToolApproved
from pydantic_ai import ToolDenied

from signoff.adapters._gate import Gate
from signoff.adapters._gate import approval_id_for
from signoff.adapters._gate import denial
from signoff.adapters._gate import edited


async def sign_off(
    requests: DeferredToolRequests, gate: Gate, *, run_key: str = ""
) -> DeferredToolResults:
    """One Signoff approval per call awaiting approval (its id from `run_key` and the tool
    call id), and the results that resume the run."""
    results = DeferredToolResults()
    for call in requests.approvals:
        approval_id = approval_id_for("pai", run_key, call.tool_call_id)
        approval = await gate.decide(approval_id, call.tool_name, call.args_as_dict())
        if approval.state == "approved":
            chosen: Any = (
                ToolApproved(override_args=approval.final_args) if edited(approval) else True
            )
        else:
            chosen = ToolDenied(denial(approval))
        results.approvals[call.tool_call_id] = chosen
    return results


async def run_signed_off(
    agent: Any, prompt: str | None, *, gate: Gate, run_key: str = "", **options: Any
) -> Any:
    """`agent.run` until its output is not a `DeferredToolRequests`, signing off each pause.
    The agent's `output_type` must include `DeferredToolRequests`."""
    result = await agent.run(prompt, **options)
    while isinstance(result.output, DeferredToolRequests):
        results = await sign_off(result.output, gate, run_key=run_key)
        options = {k: v for k, v in options.items() if k != "message_history"}
        result = await agent.run(
            message_history=result.all_messages(), deferred_tool_results=results, **options
        )
    return result
