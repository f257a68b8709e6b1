"""Rollback restores state, never the world (docs/architecture.md rule 6).

Rolling back to step k walks the effects after k on the run's current timeline (the calls in
its transcript; a step an earlier rollback undid is not on it) in reverse order: reads are
skipped, a reversible effect runs its compensator as an effect of its own (with its own
idempotency key, so a rollback that is interrupted and run again compensates each effect once),
and anything that cannot be undone (irreversible, in doubt, a failed compensation) becomes a
Page. The intent is recorded first and the end last, so recovery finds one that died. Each way
an undo can end (compensated, paged, in doubt) is handled where it happens.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from runtime import errors
from runtime.agent import Agent
from runtime.approvals import new_page
from runtime.approvals import post_page
from runtime.deps import Deps
from runtime.history import shared
from runtime.history import timetravel
from runtime.history import undone_mark
from runtime.history.undo_log import unfinished
from runtime.ports import Withdrawals
from runtime.runs import StopReason
from runtime.runs import compensation_key
from runtime.tools import Tool
from runtime.tools import ToolContext
from runtime.tools import ToolTimeout
from store import AuditEvent
from store import Batch
from store import Checkpoint
from store import Effect
from store import EffectOutcome
from store import EffectStatus
from store import Reversibility
from store import Run
from store import RunStatus
from store import errors as store_errors
from store.base import UNDO_STARTED
from store.spend import SpendChange

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
    failed: dict[str, str] = field(default_factory=dict)
    """By call id, why an effect was not compensated (it is irreversible or has no
    compensator, its compensation raised or ended in doubt, it was in doubt itself, other
    runs rely on it): each is among `paged`, and the audit's `rollback` event says why."""
    shared: dict[str, list[str]] = field(default_factory=dict)
    """By call id, the other runs that relied on an effect compensated (or, not allowed to
    be, paged): each was paged for and noted (`runtime.history.shared`)."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


async def rollback(
    deps: Deps,
    approvals: Withdrawals,
    run_id: str,
    to_step: int,
    *,
    by: str,
    compensate_shared: bool = False,
    intended: bool = False,
) -> RollbackReport:
    """Compensate everything after `to_step`, then restore that step's state as a new snapshot.

    Rolling back again to the step the run was rolled back to does nothing, and says so. An
    effect other runs rely on is compensated only with `compensate_shared`; without it the
    rollback is refused (`SharedEffect`, naming them) and changes nothing. `intended`: its
    intent is committed already (recovery finishing it)."""
    run = await deps.run(run_id)
    agent = _agent_of(deps, run)
    if to_step > run.step:
        raise errors.InvalidRequest(
            f"run {run_id} is at step {run.step}; a rollback goes back, not forward "
            f"(pick a step from 0 to {run.step})"
        )
    state = await timetravel.state_at(deps, run_id, to_step)
    if await _rolled_back_to(deps, run, to_step):
        why = f"run {run_id} is already rolled back to step {to_step}; nothing to undo"
        return RollbackReport(run_id, to_step, nothing_to_do=why)
    if not compensate_shared:
        await shared.refuse(deps, run, agent, to_step)
    undo = Undo(by, compensate_shared)
    async with deps.lease(run_id):
        if not intended:
            await _intend(deps, run_id, intent(deps, run_id, undo, to_step=to_step, restore=True))
        report = await _undo_after(deps, run, agent, to_step, undo, at_step=to_step)
        await approvals.withdraw(run_id, by=by, reason="run rolled back")
        latest = await deps.store.load_state(run_id)
        restore = Checkpoint(
            run_id=run_id,
            seq=latest.seq + 1,
            step=to_step,
            snapshot=True,
            status=RunStatus.FAILED,
            usage=latest.usage,
            stop_reason=StopReason.ROLLED_BACK,
            messages=state.messages,
            created_at=deps.clock(),
        )
        event = AuditEvent(
            action="rollback", actor=by, run_id=run_id, at=deps.clock(), detail=report.as_dict()
        )
        await deps.commit(Batch(run_id=run_id, checkpoints=[restore], events=[event]))
    return report


async def compensate_all(
    deps: Deps,
    run: Run,
    *,
    only: Sequence[str] | None = None,
    by: str | None = None,
    compensate_shared: bool = False,
    intended: bool = False,
    undoes: str | None = None,
    retry: bool = False,
) -> RollbackReport:
    """The saga of an abandoned run: undo all its effects (or `only` these calls, those a
    cancel asked to undo once they end); its state stays as it ended. An effect other runs
    rely on is paged, not compensated, unless whoever asked said so (`compensate_shared`).
    `intended`: the caller committed the `intent` already (with its own claim).
    `undoes`: the approval whose call a person undoes (`cool_off.undo`): its undo ends in
    the same transaction as the compensation's end, undone (and a run that ended done reads
    `undone`) or failed (and the approval says why). `retry`: a compensation that failed
    before runs again, under the same idempotency key (a person asked once more)."""
    agent = _agent_of(deps, run)
    undo = Undo(by or deps.worker_id, compensate_shared, undoes, retry)
    async with deps.lease(run.id):
        if not intended:
            started = intent(deps, run.id, undo, to_step=0, restore=False, only=only)
            await _intend(deps, run.id, started)
        report = await _undo_after(deps, run, agent, 0, undo, at_step=run.step, only=only)
        event = AuditEvent(
            action="compensate",
            actor=deps.worker_id,
            run_id=run.id,
            at=deps.clock(),
            detail=report.as_dict(),
        )
        ended = undone_mark.ended(undoes, report.paged, report.failed)
        mark = await undone_mark.checkpoint(deps, run.id) if ended and not ended.error else None
        await deps.commit(
            Batch(
                run_id=run.id,
                checkpoints=[mark] if mark else [],
                events=[event],
                undo_ended=ended,
            )
        )
    return report


async def finish_interrupted(
    deps: Deps, approvals: Withdrawals, run_id: str
) -> RollbackReport | None:
    """Run again the rollback (or saga) that died before it ended (inside an undo or between
    two) under the intent it wrote, not a second one; each effect is still compensated once.
    None if no undo of this run is unfinished."""
    intent = await unfinished(deps.store, run_id)
    if intent is None:
        return None
    allow = bool(intent.detail.get("compensate_shared"))  # the choice the undo was made with
    async with deps.locks.hold(run_id):
        if intent.detail.get("restore"):
            to_step = int(intent.detail["to_step"])
            return await rollback(
                deps,
                approvals,
                run_id,
                to_step,
                by=intent.actor,
                compensate_shared=allow,
                intended=True,
            )
        only = intent.detail.get("calls")
        run = await deps.run(run_id)
        undoes = intent.detail.get(undone_mark.MARKS)  # a person's undo of one approved call
        return await compensate_all(
            deps,
            run,
            only=only,
            by=intent.actor,
            compensate_shared=allow,
            intended=True,
            undoes=undoes,
        )


def _agent_of(deps: Deps, run: Run) -> Agent:
    """The agent whose compensators undo this run's effects: checked before anything is written."""
    agent = deps.agents.get(run.agent)
    if agent is None:
        raise errors.UnknownAgent(f"run {run.id} needs agent {run.agent!r} to compensate")
    return agent


async def _rolled_back_to(deps: Deps, run: Run, step: int) -> bool:
    """Whether the run's last word is a finished rollback to this very step."""
    if run.stop_reason != StopReason.ROLLED_BACK or run.step != step:
        return False
    return await unfinished(deps.store, run.id) is None


@dataclass(frozen=True)
class Undo:
    """Who undoes, and whether they chose to undo effects other runs rely on."""

    by: str
    compensate_shared: bool = False
    undoes: str | None = None
    """The approval whose call a person undoes (`cool_off.undo`): its run is marked `undone`."""
    retry: bool = False
    """Run again a compensation that failed before (same idempotency key): a person asked."""


def intent(
    deps: Deps,
    run_id: str,
    undo: Undo,
    *,
    to_step: int,
    restore: bool,
    only: Sequence[str] | None = None,
) -> AuditEvent:
    """The `undo_started` event an undo writes before it undoes anything."""
    detail: dict[str, Any] = {"to_step": to_step, "restore": restore}
    if only is not None:
        detail["calls"] = list(only)
    if undo.undoes is not None:
        detail[undone_mark.MARKS] = undo.undoes
    if undo.compensate_shared:
        detail["compensate_shared"] = True
    return AuditEvent(
        action=UNDO_STARTED, actor=undo.by, run_id=run_id, at=deps.clock(), detail=detail
    )


async def _intend(deps: Deps, run_id: str, event: AuditEvent) -> None:
    """Say what is being undone (`intent`) before undoing it: recovery finishes an
    interrupted undo, with the same choice about shared effects."""
    await deps.commit(Batch(run_id=run_id, events=[event]))


async def _undo_after(
    deps: Deps,
    run: Run,
    agent: Agent,
    step: int,
    undo: Undo,
    *,
    at_step: int,
    only: Sequence[str] | None = None,
) -> RollbackReport:
    """Undo, newest first, the effects after `step` on the run's current timeline: those whose
    call is in its transcript (not compensations, nor what an earlier rollback undid).
    Compensations are recorded at `at_step`."""
    report = RollbackReport(run.id, step)
    latest = await deps.store.load_state(run.id)
    on_timeline = {call.id for message in latest.messages for call in message.tool_calls}
    effects = await deps.store.list_effects(run.id)
    done = {e.compensates: e for e in effects if e.compensates is not None}  # the latest
    tries = Counter(e.compensates for e in effects if e.compensates is not None)
    for effect in reversed(effects):
        if effect.step <= step or effect.call_id not in on_timeline:
            continue
        if only is not None and effect.call_id not in only:
            continue
        relying = await shared.dependents(deps, effect) if shared.compensable(effect, agent) else []
        if relying:
            report.shared[effect.call_id] = [d.run_id for d in relying]
        if relying and not undo.compensate_shared and effect.compensated_by is None:
            await shared.kept(deps, run, effect, relying)  # appeared after the check
            report.paged.append(effect.call_id)
            report.failed[effect.call_id] = f"other runs rely on {effect.tool}; it was kept"
            continue
        earlier = done.get(effect.call_id)
        if undo.retry and earlier is not None and earlier.status == EffectStatus.FAILED:
            earlier = None  # a new attempt, under the same key: the tool dedupes it
        attempt = tries[effect.call_id] + 1 if earlier is None else 0
        outcome, why = await _undo(deps, run, agent, effect, earlier, at_step, attempt)
        getattr(report, outcome).append(effect.call_id)
        if why is not None:
            report.failed[effect.call_id] = why
        if relying and outcome == "compensated":
            undone_by = effect.compensated_by or f"undo:{effect.call_id}"
            await shared.undone(deps, run, effect, relying, by=undo.by, undo=undone_by)
    return report


async def _undo(
    deps: Deps,
    run: Run,
    agent: Agent,
    effect: Effect,
    earlier: Effect | None,
    at_step: int,
    attempt: int,
) -> tuple[str, str | None]:
    """Undo one effect: the report bucket it belongs in, and why it was not undone (paged)."""
    if effect.reversibility == Reversibility.READ or effect.status == EffectStatus.FAILED:
        return "skipped", None
    if effect.compensated_by is not None:
        return "compensated", None
    if effect.status != EffectStatus.COMPLETED:
        why = f"{effect.tool} may or may not have happened; it cannot be rolled back blind"
        await _page(deps, run, effect, "in_doubt", why)
        return "paged", why
    undo = agent.tools.get(effect.compensator or "")
    if effect.reversibility != Reversibility.REVERSIBLE or undo is None:
        why = f"{effect.tool} is irreversible; undo it by hand if it must be undone"
        await _page(deps, run, effect, "uncompensatable", why)
        return "paged", why
    problem = await _compensate(deps, run, undo, effect, earlier, at_step, attempt)
    if problem is None:
        return "compensated", None
    why = f"{undo.name} failed to undo {effect.tool}: {problem}"
    await _page(deps, run, effect, "compensation_failed", why)
    return "paged", why


async def _compensate(
    deps: Deps,
    run: Run,
    undo: Tool,
    effect: Effect,
    earlier: Effect | None,
    at_step: int,
    attempt: int,
) -> str | None:
    """Run the compensator as its own effect; None on success, else what went wrong.
    `attempt`: the how-manyth compensation of this effect a new one is (each its own call
    id, all under the one idempotency key)."""
    args = {k: v for k, v in effect.args.items() if k in undo.parameter_names}
    compensation = earlier or Effect(
        run_id=run.id,
        call_id=f"undo:{effect.call_id}" + (f"#{attempt}" if attempt > 1 else ""),
        lineage_id=run.lineage_id,
        step=at_step,
        tool=undo.name,
        args=args,
        idempotency_key=compensation_key(run.lineage_id, run.id, effect.call_id),
        reversibility=undo.effect or Reversibility.IRREVERSIBLE,
        compensates=effect.call_id,
        started_at=deps.clock(),
    )
    if earlier is None:
        committed = await deps.commit(Batch(run_id=run.id, start=[compensation]))
        if compensation.call_id in committed.preempted:
            return None
    elif earlier.status == EffectStatus.COMPLETED:
        return None
    elif earlier.status == EffectStatus.FAILED:
        return earlier.error or "the compensation failed"
    elif not undo.idempotent:
        if earlier.status == EffectStatus.STARTED:
            await _mark_in_doubt(deps, run, earlier)
        return "an earlier compensation was interrupted and the compensator is not idempotent"
    status, value, error = await _invoke(deps, undo, compensation, effect)
    try:
        await deps.commit(
            Batch(
                run_id=run.id,
                finish=[
                    EffectOutcome(
                        run_id=run.id,
                        call_id=compensation.call_id,
                        status=status,
                        result=value,
                        error=error,
                        finished_at=deps.clock(),
                    )
                ],
                # undone: what the call held of its limits and envelopes is given back
                spend=[SpendChange(effect.call_id, "release", "compensated")]
                if status == EffectStatus.COMPLETED
                else [],
            )
        )
    except store_errors.Conflict as exc:
        return f"could not record the compensation: {exc}"
    return None if status == EffectStatus.COMPLETED else (error or status.value)


async def _mark_in_doubt(deps: Deps, run: Run, compensation: Effect) -> None:
    """An interrupted compensation that may not run again waits for a human, not `started`."""
    outcome = EffectOutcome(
        run_id=run.id,
        call_id=compensation.call_id,
        status=EffectStatus.IN_DOUBT,
        error="interrupted before its result was recorded",
        finished_at=deps.clock(),
    )
    await deps.commit(Batch(run_id=run.id, finish=[outcome]))


async def _invoke(
    deps: Deps, undo: Tool, compensation: Effect, original: Effect
) -> tuple[EffectStatus, Any, str | None]:
    ctx = ToolContext.of(compensation, facts=deps.facts, original=original)
    try:
        return EffectStatus.COMPLETED, await undo.invoke(compensation.args, ctx), None
    except ToolTimeout as exc:
        return EffectStatus.IN_DOUBT, None, str(exc)
    except Exception as exc:
        log.warning("compensation %s failed: %r", compensation.call_id, exc)
        return EffectStatus.FAILED, None, f"{type(exc).__name__}: {exc}"


async def _page(deps: Deps, run: Run, effect: Effect, reason: str, detail: str) -> None:
    page = new_page(
        deps, run_id=run.id, call_id=effect.call_id, tool=effect.tool, reason=reason, detail=detail
    )
    await post_page(deps, run, page)
