"""Agents: a name, a model, classified tools and a default budget, checked when built."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from collections.abc import Mapping
from typing import Literal

from runtime.errors import DefinitionError
from runtime.model import Model
from runtime.tools import Tool
from runtime.tools import ToolSpec
from store import Budget
from store import Reversibility

OnFailure = Literal["stop", "compensate"]


class Agent:
    """What a run executes. Building one refuses unclassified tools and missing compensators."""

    def __init__(
        self,
        name: str,
        *,
        model: Model,
        tools: Iterable[Tool] = (),
        system_prompt: str = "",
        budget: Budget | None = None,
        on_failure: OnFailure = "stop",
    ) -> None:
        if not name:
            raise DefinitionError("an agent needs a name")
        if on_failure not in ("stop", "compensate"):
            raise DefinitionError(f"agent {name!r}: on_failure is 'stop' or 'compensate'")
        self.name = name
        self.model = model
        self.system_prompt = system_prompt
        self.budget = budget or Budget()
        self.on_failure = on_failure
        self.tools: Mapping[str, Tool] = _registry(name, tools)
        self.specs: tuple[ToolSpec, ...] = tuple(t.spec() for t in self.tools.values())

    def __repr__(self) -> str:
        return f"<Agent {self.name} tools={list(self.tools)}>"

    def with_model(self, model: Model) -> Agent:
        """The same agent on another model (one chosen in configuration, say)."""
        other = copy.copy(self)
        other.model = model
        return other

    @property
    def approval_waived(self) -> list[str]:
        """Irreversible tools that deliberately run without approval (listed at start-up)."""
        return [t.name for t in self.tools.values() if t.approval_waived]


def _registry(agent: str, tools: Iterable[Tool]) -> dict[str, Tool]:
    registry: dict[str, Tool] = {}
    for t in tools:
        if not isinstance(t, Tool):
            raise DefinitionError(f"agent {agent!r}: {t!r} is not a @tool")
        if t.name in registry:
            raise DefinitionError(f"agent {agent!r}: two tools are named {t.name!r}")
        if t.effect is None:
            raise DefinitionError(
                f"agent {agent!r}: tool {t.name!r} has no classification; declare "
                "effect='read', 'reversible' (with compensate=...) or 'irreversible'"
            )
        registry[t.name] = t
    for t in registry.values():
        _check_compensator(agent, t, registry)
    return registry


def _check_compensator(agent: str, t: Tool, registry: Mapping[str, Tool]) -> None:
    if t.effect != Reversibility.REVERSIBLE:
        return
    if not t.compensate:
        raise DefinitionError(
            f"agent {agent!r}: reversible tool {t.name!r} must name its compensating tool "
            "(compensate='...')"
        )
    undo = registry.get(t.compensate)
    if undo is None:
        raise DefinitionError(
            f"agent {agent!r}: tool {t.name!r} is compensated by {t.compensate!r}, "
            "which is not registered with the agent"
        )
    if not undo.mutating:
        # An undo interrupted by a crash is in doubt; a read would be re-run as harmless,
        # undoing twice.
        raise DefinitionError(
            f"agent {agent!r}: compensator {undo.name!r} of {t.name!r} is classified as a "
            "read; it changes the world, so classify it 'reversible' or 'irreversible'"
        )
    extra = undo.args_model.model_fields.keys() - t.args_model.model_fields.keys()
    required = {n for n in extra if undo.args_model.model_fields[n].is_required()}
    if required:
        raise DefinitionError(
            f"agent {agent!r}: compensator {undo.name!r} requires {sorted(required)}, which "
            f"{t.name!r} does not take; a compensator receives the original call's arguments"
        )
