"""LangGraph / LangChain: a graph paused by `HumanInTheLoopMiddleware` (its batched
`action_requests`) or by `interrupt()` through `ask_signoff` gets one Signoff approval per
call, and is resumed with `Command(resume=...)` once the decisions land: approve, edit (the
edited arguments, where the tool's review config allows edits) or reject (with the reason;
also when nobody decided in time).

    result = await resume_when_decided(graph, {"configurable": {"thread_id": "t1"}}, gate)

Any process with the graph and its checkpointer can do it: what is paused is read from the
checkpointer (`aget_state`), and each approval's id is fixed by the thread and the interrupt,
so a second process asking again finds the same approvals and their decisions.
"""

from __future__ import annotations

from typing import Any

from langgraph.types import Command
from langgraph.types import interrupt

from signoff.adapters._gate import Gate
from signoff.adapters._gate import approval_id_for
from signoff.adapters._gate import denial
from signoff.adapters._gate import edited
from signoff.models import Approval

SIGNOFF_KEY = "signoff"


def ask_signoff(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """Inside a graph node: pause until Signoff decides this call. Returns `{"approved":
    bool, "args": the arguments to act on, "reason": str | None}`; act only if approved."""
    answer: dict[str, Any] = interrupt({SIGNOFF_KEY: {"tool": tool, "args": args}})
    return answer


async def resume_when_decided(graph: Any, config: dict[str, Any], gate: Gate) -> Any:
    """Wait for the decisions of every pending interrupt of the thread, resume the graph
    with them, and repeat until it ends; returns its final values."""
    thread = str(config.get("configurable", {}).get("thread_id", ""))
    while True:
        state = await graph.aget_state(config)
        pending = [found for task in state.tasks for found in task.interrupts]
        if not pending:
            return state.values
        resume = {
            found.id: await _answer(found.value, gate, f"{thread}:{found.id}") for found in pending
        }
        await graph.ainvoke(Command(resume=resume), config)


async def _answer(value: Any, gate: Gate, key: str) -> Any:
    if isinstance(value, dict) and SIGNOFF_KEY in value:
        call = value[SIGNOFF_KEY]
        approval = await gate.decide(approval_id_for("lg", key), call["tool"], call["args"])
        return {
            "approved": approval.state == "approved",
            "args": approval.final_args,
            "reason": None if approval.state == "approved" else denial(approval),
        }
    if isinstance(value, dict) and "action_requests" in value:
        return await hitl_decisions(value, gate, key=key)
    raise ValueError(f"an interrupt Signoff does not know how to answer: {value!r:.200}")


async def hitl_decisions(request: dict[str, Any], gate: Gate, *, key: str) -> dict[str, Any]:
    """`HumanInTheLoopMiddleware`'s request answered: `{"decisions": [...]}` in its order."""
    allowed = {
        config["action_name"]: set(config.get("allowed_decisions", ()))
        for config in request.get("review_configs", ())
    }
    decisions = []
    for number, action in enumerate(request["action_requests"]):
        approval_id = approval_id_for("lg", key, str(number))
        approval = await gate.decide(approval_id, action["name"], action["args"])
        decisions.append(_decision(approval, allowed.get(action["name"], set())))
    return {"decisions": decisions}


def _decision(approval: Approval, allowed: set[str]) -> dict[str, Any]:
    if approval.state != "approved":
        return {"type": "reject", "message": denial(approval)}
    if not edited(approval):
        return {"type": "approve"}
    if "edit" not in allowed:  # approved only as edited, which this tool may not take
        return {
            "type": "reject",
            "message": f"Not executed: {approval.tool} was approved only with other arguments "
            f"({approval.final_args}), and this tool's review does not allow edits.",
        }
    return {"type": "edit", "edited_action": {"name": approval.tool, "args": approval.final_args}}
