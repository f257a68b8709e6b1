"""OpenAI Agents SDK: tools with `needs_approval` (and local MCP servers' `require_approval`)
pause a run with `interruptions`; `sign_off` asks Signoff about each and marks the paused
`RunState` - `approve(item)` or `reject(item, rejection_message=reason)` - and
`run_signed_off` runs an agent to its end that way, in one process.

The paused state is text (`RunState.to_string()`), and Signoff keeps it: each approval of a
pause is asked with it as its `resume_state`. `ask_signed_off` runs until the end or a pause
and, at a pause, asks and returns `Paused` without waiting; `resume_when_decided(agent,
approval_id, ...)`, in any process (a fresh one, a webhook receiver), reads the state kept
with that approval (`RunState.from_string`), waits for the decisions and runs on, to the end
or the next pause. The approvals' ids come from `run_key` and each call id, so asking again
finds the same approvals. Resume one pause from one place: the tools run where it resumes.
(`on_pause(run_key, text)` is still told the text, for callers that keep it themselves.)

The SDK runs an approved call with the arguments the model gave; an approval whose
arguments a human edited is therefore a rejection that tells the model which arguments were
approved (its call with those is a new request).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agents import Runner
from agents import RunState

from signoff.adapters._gate import Gate
from signoff.adapters._gate import approval_id_for
from signoff.adapters._gate import denial
from signoff.adapters._gate import edited
from signoff.errors import SignoffError

OnPause = Callable[[str, str], Awaitable[None]]


@dataclass(frozen=True)
class Paused:
    """A run paused for Signoff: its approvals are asked, each keeping the paused state;
    `resume_when_decided` with any of `approval_ids` resumes it, from any process."""

    run_key: str
    approval_ids: tuple[str, ...]


async def sign_off(
    state: RunState[Any, Any], gate: Gate, *, run_key: str, resume_state: str | None = None
) -> RunState[Any, Any]:
    """Decide every interruption of `state` through Signoff (in place) and return it; a new
    approval keeps `resume_state`."""
    for item in state.get_interruptions():
        call_id, args = _call_of(item)
        approval = await gate.decide(
            approval_id_for("oa", run_key, call_id),
            item.tool_name or "",
            args,
            resume_state=resume_state,
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
    return await _decided_to_the_end(agent, result, gate, run_key, on_pause, options)


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
    return await _decided_to_the_end(agent, result, gate, run_key, on_pause, options)


async def ask_signed_off(
    agent: Any, input: Any, *, gate: Gate, run_key: str, **options: Any
) -> Any:
    """`Runner.run` to the end (its result) or to a pause: then its approvals are asked,
    with the paused state kept by Signoff, and `Paused` names them; nothing waits."""
    return await _asked(await Runner.run(agent, input, **options), gate, run_key)


async def resume_when_decided(
    agent: Any, approval_id: str, *, gate: Gate, run_key: str, **options: Any
) -> Any:
    """In any process: resume the run paused with `approval_id` from the state Signoff kept
    with it, once its approvals are decided (each waited on up to `gate.timeout`; one still
    pending is denied), to the end (its result) or the next pause (asked, `Paused`)."""
    kept = await gate.client.get(approval_id)
    if kept.resume_state is None:
        raise SignoffError(f"approval {approval_id} keeps no paused run to resume")
    state = await RunState.from_string(agent, kept.resume_state)
    decided = await sign_off(state, gate, run_key=run_key)
    return await _asked(await Runner.run(agent, decided, **options), gate, run_key)


async def _decided_to_the_end(
    agent: Any,
    result: Any,
    gate: Gate,
    run_key: str,
    on_pause: OnPause | None,
    options: dict[str, Any],
) -> Any:
    while result.interruptions:
        state = result.to_state()
        text = state.to_string()
        if on_pause is not None:
            await on_pause(run_key, text)
        decided = await sign_off(state, gate, run_key=run_key, resume_state=text)
        result = await Runner.run(agent, decided, **options)
    return result


async def _asked(result: Any, gate: Gate, run_key: str) -> Any:
    if not result.interruptions:
        return result
    state = result.to_state()
    text = state.to_string()
    asked = []
    for item in state.get_interruptions():
        call_id, args = _call_of(item)
        approval_id = approval_id_for("oa", run_key, call_id)
        await gate.ask(approval_id, item.tool_name or "", args, resume_state=text)
        asked.append(approval_id)
    return Paused(run_key, tuple(asked))


def _call_of(item: Any) -> tuple[str, dict[str, Any]]:
    call_id = str(getattr(item.raw_item, "call_id", None) or getattr(item.raw_item, "id", ""))
    return call_id, _arguments(getattr(item, "arguments", None))


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        parsed = json.loads(raw or "{}")
    except ValueError:
        return {"arguments": raw}
    return parsed if isinstance(parsed, dict) else {"arguments": parsed}
