"""Effects two runs share (docs/architecture.md, "A shared effect has dependents").

A run handed another run's effect (the same key with the same arguments) relies on it; the
store records each such reuse. Before an effect is compensated, the runs still relying on it
are named: a rollback or a cancel that would compensate one refuses, changing nothing,
unless the operator says so (`compensate_shared`); a saga nobody asked for pages instead.
Compensated all the same, it pages on-call and marks each run relying on it once: an audit
event on its timeline and a note in its thread.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass

from runtime import errors
from runtime.agent import Agent
from runtime.approvals import new_page
from runtime.approvals import post_page
from runtime.deps import Deps
from store import AuditEvent
from store import Effect
from store import EffectStatus
from store import Reversibility
from store import Run
from store import errors as store_errors
from store.records import EffectReuse

UNDONE = "relied_on_effect_undone"
"""The audit event on a run whose effect relied on was compensated all the same."""


@dataclass(frozen=True)
class Dependent:
    """A run relying on an effect (its call that was handed it)."""

    run_id: str
    call_id: str
    reuse: EffectReuse
    """The recorded reuse that ties the two (marked once the effect is undone)."""


async def dependents(deps: Deps, effect: Effect) -> list[Dependent]:
    """The other runs relying on what `effect` did now: those handed it, and, when it was
    itself handed another run's, that run and whoever else was handed it. A run that no
    longer relies on it (its own side undone, or rolled back past that call) is left out."""
    found: list[Dependent] = []
    for reuse in await deps.store.effect_group(effect.run_id, effect.call_id):
        if (reuse.run_id, reuse.call_id) == (effect.run_id, effect.call_id):
            other = (reuse.from_run_id, reuse.from_call_id)
        else:
            other = (reuse.run_id, reuse.call_id)
        if other[0] != effect.run_id and await _relies(deps, *other):
            found.append(Dependent(other[0], other[1], reuse))
    return found


async def shared(deps: Deps, effects: Iterable[Effect]) -> dict[str, list[Dependent]]:
    """By call id, the effects among these that other runs rely on, and who."""
    found: dict[str, list[Dependent]] = {}
    for effect in effects:
        relying = await dependents(deps, effect)
        if relying:
            found[effect.call_id] = relying
    return found


async def _relies(deps: Deps, run_id: str, call_id: str) -> bool:
    try:
        own = await deps.store.get_effect(run_id, call_id)
        if own.compensated_by is not None:
            return False
    except store_errors.NotFound:
        pass  # handed the effect by the ledger: it has no row of its own
    try:
        state = await deps.store.load_state(run_id)
    except store_errors.NotFound:
        return False
    return any(call.id == call_id for m in state.messages for call in m.tool_calls)


def compensable(effect: Effect, agent: Agent) -> bool:
    """An effect an undo runs a compensator for (or did): what other runs may rely on."""
    return (
        effect.status == EffectStatus.COMPLETED
        and effect.compensates is None
        and effect.reversibility == Reversibility.REVERSIBLE
        and (effect.compensator or "") in agent.tools
    )


async def refuse(deps: Deps, run: Run, agent: Agent, step: int) -> None:
    """`SharedEffect`, naming them, if an effect the rollback would compensate is relied on
    by another run (checked before anything is written)."""
    latest = await deps.store.load_state(run.id)
    on_timeline = {call.id for message in latest.messages for call in message.tool_calls}
    undoable = [
        e
        for e in await deps.store.list_effects(run.id)
        if e.step > step
        and e.call_id in on_timeline
        and e.compensated_by is None
        and compensable(e, agent)
    ]
    found = await shared(deps, undoable)
    if found:
        raise refusal(run.id, found, {e.call_id: e.tool for e in undoable})


def refusal(
    run_id: str, found: Mapping[str, Sequence[Dependent]], tools: Mapping[str, str]
) -> errors.SharedEffect:
    """Why the compensation was refused, naming every run relying on each effect."""
    parts = [
        f"{tools.get(call, call)} (call {call}) is relied on by {named(relying)}"
        for call, relying in found.items()
    ]
    return errors.SharedEffect(
        f"run {run_id}: {'; '.join(parts)}: compensating it would undo what those runs were "
        "told happened, so nothing changed; to undo it all the same, say so explicitly "
        "(compensate_shared; in the CLI --compensate-shared): they are paged and noted",
        run_id=run_id,
        shared={call: [(d.run_id, d.call_id) for d in relying] for call, relying in found.items()},
    )


def named(relying: Iterable[Dependent]) -> str:
    """`run B (call c9), run C (call c4)`."""
    return ", ".join(f"run {d.run_id} (call {d.call_id})" for d in relying)


async def undone(
    deps: Deps, run: Run, effect: Effect, relying: Sequence[Dependent], *, by: str, undo: str
) -> None:
    """`effect` was compensated though `relying` rely on it: page on-call, then mark each
    once (an audit event on its timeline, a note in its thread)."""
    detail = (
        f"{effect.tool} of run {run.id} was compensated ({undo}), by {by}'s explicit choice, "
        f"though {named(relying)} relied on it: what they did or told may no longer hold"
    )
    await _page(deps, run, effect, "shared_undone", detail)
    marks = [
        (
            d.reuse,
            AuditEvent(
                action=UNDONE,
                actor=by,
                run_id=d.run_id,
                at=deps.clock(),
                detail={
                    "call_id": d.call_id,
                    "tool": effect.tool,
                    "by_run": run.id,
                    "by_call": effect.call_id,
                    "compensation": undo,
                },
            ),
        )
        for d in relying
    ]
    await deps.store.mark_reuses_undone(marks)


async def kept(deps: Deps, run: Run, effect: Effect, relying: Sequence[Dependent]) -> None:
    """A saga nobody asked to touch shared effects leaves this one: a person decides."""
    detail = (
        f"{effect.tool} of run {run.id} was not compensated: {named(relying)} rely on it; "
        f"roll back with compensate_shared (CLI: --compensate-shared) to undo it all the same"
    )
    await _page(deps, run, effect, "shared_kept", detail)


async def _page(deps: Deps, run: Run, effect: Effect, reason: str, detail: str) -> None:
    """Page on-call about `effect` of `run`, which other runs relied on."""
    page = new_page(
        deps, run_id=run.id, call_id=effect.call_id, tool=effect.tool, reason=reason, detail=detail
    )
    await post_page(deps, run, page)
