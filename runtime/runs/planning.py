"""Checking one tool call a model made before anything is written for it: the tool it names,
its arguments validated, the idempotency key it runs under, whether a person must approve
it, or why it cannot run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runtime.agent import Agent
from runtime.model import unparsed_arguments
from runtime.runs.keys import canonical_json
from runtime.runs.keys import idempotency_key
from runtime.tools import Tool
from runtime.tools import ToolArgumentError
from store import Run
from store import ToolCall
from store.digest import canonical_digest


@dataclass(frozen=True, slots=True)
class Plan:
    """One tool call, checked: which tool, validated args, its key, or why it cannot run."""

    call: ToolCall
    tool: Tool | None = None
    args: dict[str, Any] | None = None
    key: str | None = None
    problem: str | None = None
    needs_approval: bool = False
    """Whether it passes the gate (an approval is made for it): its tool asks a person, or
    a limit counts its calls."""
    unasked: bool = False
    """It passes the gate only for its limits: its tool itself needs no approval."""
    digest: str | None = None
    """`args_digest(args)`, from the canonical JSON the key was made of (computed once)."""


def plan(
    call: ToolCall, agent: Agent, run: Run, gated: Callable[[str], bool] = lambda tool: False
) -> Plan:
    """`gated(tool)`: whether a limit counts the calls of a tool that needs no approval."""
    tool = agent.tools.get(call.name)
    if tool is None:
        known = ", ".join(agent.tools) or "none"
        return Plan(call, problem=f"unknown tool {call.name!r}; the tools are: {known}")
    raw = unparsed_arguments(call)
    if raw is not None:
        return Plan(
            call, tool, problem=f"the arguments of {call.name} are not a JSON object: {raw!r}"
        )
    try:
        args = tool.validate(call.arguments)
    except ToolArgumentError as exc:
        return Plan(call, tool, problem=str(exc))
    business_id = tool.business_id(args)
    canonical = canonical_json(args)
    key = idempotency_key(run.lineage_id, tool.name, args, business_id, canonical=canonical)
    # A dry run executes no mutating tool, so it has nothing to ask a human about.
    live = not (run.dry_run and tool.mutating)
    ask = tool.requires_approval and live
    counted = not tool.requires_approval and tool.mutating and live and gated(tool.name)
    return Plan(
        call,
        tool,
        args,
        key,
        needs_approval=ask or counted,
        unasked=counted,
        digest=canonical_digest(canonical),
    )
