"""Rollback restores state, never the world (DESIGN rule 6).

Rolling back to step k walks the effects after k on the run's current timeline (the calls in
its transcript; a step an earlier rollback undid is not on it) in reverse order: reads are
skipped, a reversible effect runs its compensator as an effect of its own (with its own
idempotency key, so a rollback that is interrupted and run again compensates each effect once),
and anything that cannot be undone (irreversible, in doubt, a failed compensation) becomes a
Page. The intent is recorded first and the end last, so recovery finds one that died.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from runtime import errors
from runtime.budget import StopReason
from runtime.keys import compensation_key
from runtime.lease import hold_lease
from runtime.tools import Tool, ToolContext, ToolTimeout
from store import (
    AuditEvent,
    Batch,
    Checkpoint,
    Effect,
    EffectOutcome,
    EffectStatus,
    Reversibility,
    Run,
    RunStatus,
)
from store import errors as store_errors
from store.base import UNDO_ENDED, UNDO_STARTED

if TYPE_CHECKING:
    from runtime.agent import Agent
    from runtime.engine import Runtime

log = logging.getLogger("signoff.rollback")


@dataclass
class RollbackReport:
    run_id: str
    to_step: int
    compensated: list[str] = field(default_factory=list)
    paged: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    nothing_to_do: str | None = None
    """Why nothing was done: the run was rolled back to this step already."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "to_step": self.to_step,
            "compensated": self.compensated,
            "paged": self.paged,
            "skipped": self.skipped,
            "nothing_to_do": self.nothing_to_do,
        }


async def rollback(rt: Runtime, run_id: str, to_step: int, *, by: str) -> RollbackReport:
    """Compensate everything after `to_step`, then restore that step's state as a new snapshot.

    Rolling back again to the step the run was rolled back to does nothing, and says so."""
    run = await rt.get(run_id)
    agent = _agent_of(rt, run)
    if to_step > run.step:
        raise errors.InvalidRequest(
            f"run {run_id} is at step {run.step}; a rollback goes back, not forward "
            f"(pick a step from 0 to {run.step})"
        )
    state = await rt.state_at(run_id, to_step)
    if await _rolled_back_to(rt, run, to_step):
        why = f"run {run_id} is already rolled back to step {to_step}; nothing to undo"
        return RollbackReport(run_id, to_step, nothing_to_do=why)
    async with hold_lease(rt.store, run_id, rt.worker_id, ttl=rt.lease_ttl, clock=rt.clock):
        await _intend(rt, run_id, by, to_step=to_step, restore=True)
        report = await _undo_after(rt, run, agent, to_step, at_step=to_step)
        await rt.desk.withdraw(run_id, by=by, reason="run rolled back")
        latest = await rt.store.load_state(run_id)
        restore = Checkpoint(
            run_id=run_id,
            seq=latest.seq + 1,
            step=to_step,
            snapshot=True,
            status=RunStatus.FAILED,
            usage=latest.usage,
            stop_reason=StopReason.ROLLED_BACK,
            messages=state.messages,
            created_at=rt.clock(),
        )
        event = AuditEvent(
            action="rollback", actor=by, run_id=run_id, at=rt.clock(), detail=report.as_dict()
        )
        await rt.store.commit(
            Batch(run_id=run_id, owner=rt.worker_id, checkpoints=[restore], events=[event])
        )
    return report


async def compensate_all(rt: Runtime, run: Run) -> RollbackReport:
    """The saga of an abandoned run: undo all its effects; its state stays as it ended."""
    agent = _agent_of(rt, run)
    async with hold_lease(rt.store, run.id, rt.worker_id, ttl=rt.lease_ttl, clock=rt.clock):
        await _intend(rt, run.id, rt.worker_id, to_step=0, restore=False)
        report = await _undo_after(rt, run, agent, 0, at_step=run.step)
        event = AuditEvent(
            action="compensate",
            actor=rt.worker_id,
            run_id=run.id,
            at=rt.clock(),
            detail=report.as_dict(),
        )
        await rt.store.commit(Batch(run_id=run.id, owner=rt.worker_id, events=[event]))
    return report


async def unfinished(rt: Runtime, run_id: str) -> AuditEvent | None:
    """The intent of this run's rollback (or saga) that began and never ended, if any."""
    intent = None
    for event in await rt.store.list_events(run_id=run_id):
        if event.action == UNDO_STARTED:
            intent = event
        elif event.action in UNDO_ENDED:
            intent = None
    return intent


async def finish_interrupted(rt: Runtime, run_id: str) -> RollbackReport | None:
    """Run again the rollback (or saga) that died before it ended (inside an undo or between
    two); each effect is still compensated once. None if no undo of this run is unfinished."""
    intent = await unfinished(rt, run_id)
    if intent is None:
        return None
    if intent.detail.get("restore"):
        return await rt.rollback(run_id, int(intent.detail["to_step"]), by=intent.actor)
    async with rt.locks.hold(run_id):
        return await compensate_all(rt, await rt.get(run_id))


def _agent_of(rt: Runtime, run: Run) -> Agent:
    """The agent whose compensators undo this run's effects: checked before anything is written."""
    agent = rt.agents.get(run.agent)
    if agent is None:
        raise errors.UnknownAgent(f"run {run.id} needs agent {run.agent!r} to compensate")
    return agent


async def _rolled_back_to(rt: Runtime, run: Run, step: int) -> bool:
    """Whether the run's last word is a finished rollback to this very step."""
    if run.stop_reason != StopReason.ROLLED_BACK or run.step != step:
        return False
    return await unfinished(rt, run.id) is None


async def _intend(rt: Runtime, run_id: str, by: str, *, to_step: int, restore: bool) -> None:
    """Say what is being undone before undoing it: recovery finishes an interrupted undo."""
    detail = {"to_step": to_step, "restore": restore}
    event = AuditEvent(action=UNDO_STARTED, actor=by, run_id=run_id, at=rt.clock(), detail=detail)
    await rt.store.commit(Batch(run_id=run_id, owner=rt.worker_id, events=[event]))


async def _undo_after(
    rt: Runtime, run: Run, agent: Agent, step: int, *, at_step: int
) -> RollbackReport:
    """Undo, newest first, the effects after `step` on the run's current timeline: those whose
    call is in its transcript (not compensations, nor what an earlier rollback undid).
    Compensations are recorded at `at_step`."""
    report = RollbackReport(run.id, step)
    latest = await rt.store.load_state(run.id)
    on_timeline = {call.id for message in latest.messages for call in message.tool_calls}
    effects = await rt.store.list_effects(run.id)
    done = {e.compensates: e for e in effects if e.compensates is not None}
    for effect in reversed(effects):
        if effect.step <= step or effect.call_id not in on_timeline:
            continue
        outcome = await _undo(rt, run, agent, effect, done.get(effect.call_id), at_step)
        getattr(report, outcome).append(effect.call_id)
    return report


async def _undo(
    rt: Runtime, run: Run, agent: Agent, effect: Effect, earlier: Effect | None, at_step: int
) -> str:
    """Undo one effect; returns the report bucket it belongs in."""
    if effect.reversibility == Reversibility.READ or effect.status == EffectStatus.FAILED:
        return "skipped"
    if effect.compensated_by is not None:
        return "compensated"
    if effect.status != EffectStatus.COMPLETED:
        await _page(
            rt,
            run,
            effect,
            "in_doubt",
            f"{effect.tool} may or may not have happened; it cannot be rolled back blind",
        )
        return "paged"
    undo = agent.tools.get(effect.compensator or "")
    if effect.reversibility != Reversibility.REVERSIBLE or undo is None:
        await _page(
            rt,
            run,
            effect,
            "uncompensatable",
            f"{effect.tool} is irreversible; undo it by hand if it must be undone",
        )
        return "paged"
    problem = await _compensate(rt, run, undo, effect, earlier, at_step)
    if problem is None:
        return "compensated"
    await _page(
        rt,
        run,
        effect,
        "compensation_failed",
        f"{undo.name} failed to undo {effect.tool}: {problem}",
    )
    return "paged"


async def _compensate(
    rt: Runtime, run: Run, undo: Tool, effect: Effect, earlier: Effect | None, at_step: int
) -> str | None:
    """Run the compensator as its own effect; None on success, else what went wrong."""
    args = {k: v for k, v in effect.args.items() if k in undo.parameter_names}
    compensation = earlier or Effect(
        run_id=run.id,
        call_id=f"undo:{effect.call_id}",
        lineage_id=run.lineage_id,
        step=at_step,
        tool=undo.name,
        args=args,
        idempotency_key=compensation_key(run.lineage_id, run.id, effect.call_id),
        reversibility=undo.effect or Reversibility.IRREVERSIBLE,
        compensates=effect.call_id,
        started_at=rt.clock(),
    )
    if earlier is None:
        committed = await rt.store.commit(
            Batch(run_id=run.id, owner=rt.worker_id, start=[compensation])
        )
        if compensation.call_id in committed.preempted:
            return None
    elif earlier.status == EffectStatus.COMPLETED:
        return None
    elif earlier.status == EffectStatus.FAILED:
        return earlier.error or "the compensation failed"
    elif not undo.idempotent:
        if earlier.status == EffectStatus.STARTED:
            await _mark_in_doubt(rt, run, earlier)
        return "an earlier compensation was interrupted and the compensator is not idempotent"
    status, value, error = await _invoke(rt, undo, compensation, effect)
    try:
        await rt.store.commit(
            Batch(
                run_id=run.id,
                owner=rt.worker_id,
                finish=[
                    EffectOutcome(
                        run_id=run.id,
                        call_id=compensation.call_id,
                        status=status,
                        result=value,
                        error=error,
                        finished_at=rt.clock(),
                    )
                ],
            )
        )
    except store_errors.Conflict as exc:
        return f"could not record the compensation: {exc}"
    return None if status == EffectStatus.COMPLETED else (error or status.value)


async def _mark_in_doubt(rt: Runtime, run: Run, compensation: Effect) -> None:
    """An interrupted compensation that may not run again waits for a human, not `started`."""
    outcome = EffectOutcome(
        run_id=run.id,
        call_id=compensation.call_id,
        status=EffectStatus.IN_DOUBT,
        error="interrupted before its result was recorded",
        finished_at=rt.clock(),
    )
    await rt.store.commit(Batch(run_id=run.id, owner=rt.worker_id, finish=[outcome]))


async def _invoke(
    rt: Runtime, undo: Tool, compensation: Effect, original: Effect
) -> tuple[EffectStatus, Any, str | None]:
    ctx = ToolContext(
        run_id=compensation.run_id,
        call_id=compensation.call_id,
        step=compensation.step,
        idempotency_key=compensation.idempotency_key,
        lineage_id=compensation.lineage_id,
        facts=rt.facts,
        original=original,
    )
    try:
        return EffectStatus.COMPLETED, await undo.invoke(compensation.args, ctx), None
    except ToolTimeout as exc:
        return EffectStatus.IN_DOUBT, None, str(exc)
    except Exception as exc:
        log.warning("compensation %s failed: %r", compensation.call_id, exc)
        return EffectStatus.FAILED, None, f"{type(exc).__name__}: {exc}"


async def _page(rt: Runtime, run: Run, effect: Effect, reason: str, detail: str) -> None:
    page = rt.desk.new_page(
        run_id=run.id, call_id=effect.call_id, tool=effect.tool, reason=reason, detail=detail
    )
    committed = await rt.store.commit(Batch(run_id=run.id, pages=[page]))
    if page.id in committed.new_pages:
        await rt.announce_page(page, run)
