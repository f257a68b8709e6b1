"""Checking one tool call a model made before anything is written for it: the tool it names,
its arguments validated, the idempotency key it runs under, whether a person must approve
it, or why it cannot run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runtime.agent import Agent
from runtime.model import unparsed_arguments
from runtime.runs.keys import canonical_json, idempotency_key
from runtime.tools import Tool, ToolArgumentError
from store import Run, ToolCall
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
    digest: str | None = None
    """`args_digest(args)`, from the canonical JSON the key was made of (computed once)."""


def plan(call: ToolCall, agent: Agent, run: Run) -> Plan:
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
    ask = tool.requires_approval and not (run.dry_run and tool.mutating)
    return Plan(call, tool, args, key, needs_approval=ask, digest=canonical_digest(canonical))
