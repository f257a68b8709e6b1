"""OpenAI Agents SDK: tools with `needs_approval` (and local MCP servers' `require_approval`)
pause a run with `interruptions`; `sign_off` asks Signoff about each and marks the paused
`RunState` - `approve(item)` or `reject(item, rejection_message=reason)` - and
`run_signed_off` runs an agent to its end that way.

The paused state is text (`RunState.to_string()`): `on_pause(run_key, text)` is told it
before waiting, so it can be kept (a file, a database), and `resume_signed_off` picks it up
from any process (`RunState.from_string`) once the decisions land; the approvals' ids come
from `run_key` and each call id, so asking again finds the same approvals.

The SDK runs an approved call with the arguments the model gave; an approval whose
arguments a human edited is therefore a rejection that tells the model which arguments were
approved (its call with those is a new request).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from agents import Runner, RunState

from signoff.adapters._gate import Gate, approval_id_for, denial, edited

OnPause = Callable[[str, str], Awaitable[None]]


async def sign_off(state: RunState[Any, Any], gate: Gate, *, run_key: str) -> RunState[Any, Any]:
    """Decide every interruption of `state` through Signoff (in place) and return it."""
    for item in state.get_interruptions():
        call_id = str(getattr(item.raw_item, "call_id", None) or getattr(item.raw_item, "id", ""))
        args = _arguments(getattr(item, "arguments", None))
        approval = await gate.decide(
            approval_id_for("oa", run_key, call_id), item.tool_name or "", args
        )
        if approval.state == "approved" and not edited(approval):
            state.approve(item)
        elif approval.state == "approved":
            state.reject(
                item,
                rejection_message=f"Not executed as proposed: {approval.decided_by} approved "
                f"{approval.tool} only with these arguments: {approval.final_args}.",
            )
        else:
            state.reject(item, rejection_message=denial(approval))
    return state


async def run_signed_off(
    agent: Any,
    input: Any,
    *,
    gate: Gate,
    run_key: str,
    on_pause: OnPause | None = None,
    **options: Any,
) -> Any:
    """`Runner.run` to the end, each pause decided through Signoff."""
    result = await Runner.run(agent, input, **options)
    while result.interruptions:
        state = result.to_state()
        if on_pause is not None:
            await on_pause(run_key, state.to_string())
        result = await Runner.run(agent, await sign_off(state, gate, run_key=run_key), **options)
    return result


async def resume_signed_off(
    agent: Any,
    paused: str,
    *,
    gate: Gate,
    run_key: str,
    on_pause: OnPause | None = None,
    **options: Any,
) -> Any:
    """Resume, from any process, a run paused as `paused` (its `to_string()` text)."""
    state = await RunState.from_string(agent, paused)
    result = await Runner.run(agent, await sign_off(state, gate, run_key=run_key), **options)
    while result.interruptions:
        state = result.to_state()
        if on_pause is not None:
            await on_pause(run_key, state.to_string())
        result = await Runner.run(agent, await sign_off(state, gate, run_key=run_key), **options)
    return result


def _arguments(raw: Any) -> dict[str, Any]:
    import json

    if isinstance(raw, dict):
        return raw
    try:
        parsed = json.loads(raw or "{}")
    except ValueError:
        return {"arguments": raw}
    return parsed if isinstance(parsed, dict) else {"arguments": parsed}
