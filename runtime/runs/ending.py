"""How runs end and are resolved: cancel, the saga of an abandoned run, and a human
settling an effect left in doubt. Each acts by compare-and-set on the run's history."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from runtime import errors
from runtime.deps import Deps
from runtime.history import compensate_all
from runtime.history import shared_effects
from runtime.history import shared_refusal
from runtime.ports import Withdrawals
from runtime.runs.budget import BUDGET_REASONS
from runtime.runs.budget import StopReason
from store import TERMINAL_STATUSES
from store import AuditEvent
from store import Batch
from store import Checkpoint
from store import Effect
from store import EffectOutcome
from store import EffectStatus
from store import PageSettlement
from store import Run
from store import RunStatus
from store import errors as store_errors
from store.spend import SpendChange

log = logging.getLogger("signoff.ending")


_ENDING: set[asyncio.Task[Run]] = set()
"""What follows cancels that did not wait for their run's driver here (kept referenced)."""


async def cancel(
    deps: Deps,
    approvals: Withdrawals,
    run_id: str,
    *,
    by: str,
    reason: str,
    wait: bool = True,
    compensate: bool = False,
    compensate_shared: bool = False,
) -> Run:
    """Stop a run for good; its pending approvals are declined with reason `cancelled`.

    A driver of the run in this process (a tool running) stops at its next write, which is
    after the tool ends. `wait=False` answers at once all the same (a request must not hang
    on a tool): what follows the stop (the notice, a saga) runs once that driver lets go.
    `compensate`: a reversible effect in flight now is undone once it ends; the choice is in
    the cancel's audit event, so whichever worker drives the run when the tool ends sees it.
    One other runs rely on is undone only with `compensate_shared` too: without it the cancel
    is refused (`SharedEffect`, naming them) and changes nothing."""
    run = await deps.run(run_id)
    if run.status in (RunStatus.DONE, RunStatus.CANCELLED):
        raise errors.RunFinished(f"run {run_id} is already {run.status.value}")
    detail: dict[str, Any] = {"reason": reason}
    if compensate:
        flight = await in_flight(deps, run_id)
        found = {} if compensate_shared else await shared_effects(deps, flight)
        if found:
            raise shared_refusal(run_id, found, {e.call_id: e.tool for e in flight})
        detail["compensate"] = [e.call_id for e in flight]
        if compensate_shared:
            detail["compensate_shared"] = True
    event = AuditEvent(action="cancel", actor=by, run_id=run_id, at=deps.clock(), detail=detail)
    await _append_status(deps, run_id, RunStatus.CANCELLED, StopReason.CANCELLED, event)
    await approvals.withdraw(
        run_id, by=by, reason=f"run cancelled ({reason})" if reason else "run cancelled"
    )
    if not wait and deps.locks.busy(run_id):
        task = asyncio.create_task(_after_stop_when_free(deps, run_id))
        _ENDING.add(task)
        task.add_done_callback(_ENDING.discard)
        return await deps.run(run_id)
    return await _after_stop_when_free(deps, run_id)


async def _after_stop_when_free(deps: Deps, run_id: str) -> Run:
    async with deps.locks.hold(run_id):
        return await after_stop(deps, await deps.run(run_id))


async def in_flight(deps: Deps, run_id: str) -> list[Effect]:
    """The run's effects started and not ended: a tool running now (or one whose worker
    died, which the worker that takes the run over settles)."""
    return [e for e in await deps.store.list_effects(run_id) if e.status == EffectStatus.STARTED]


def still_running(
    run_id: str,
    effects: Sequence[Effect],
    *,
    compensate: bool = False,
    relying: Mapping[str, Sequence[str]] | None = None,
) -> str | None:
    """What a cancel says while effects are in flight, the same words on every surface: the
    run is cancelled, the tool is not stopped halfway, its result is recorded, and (if the
    cancel asked) a reversible one is then compensated; `relying`: by call id, the other runs
    relying on one, which are then paged for and noted."""
    if not effects:
        return None
    names = ", ".join(f"{e.tool} ({e.call_id})" for e in effects)
    verb = "is" if len(effects) == 1 else "are"
    before = max(min(e.step for e in effects) - 1, 0)  # rollback restores this step
    head = f"Run {run_id} is cancelled, but {names} {verb} still running: the run takes no "
    if compensate:
        shared_ones = "".join(
            f" Runs {', '.join(runs)} rely on {call}: they are paged for and noted."
            for call, runs in (relying or {}).items()
            if runs
        )
        return (
            head
            + (
                "further step; what the tool does is recorded when it ends, then compensated if "
                "it is reversible (an irreversible one is paged for a person to undo)."
            )
            + shared_ones
        )
    return head + (
        "further step; what the tool does is recorded when it ends (undo it with "
        f"`signoff runs rollback {run_id} --to-step {before}` if it must not stand)."
    )


async def resolve(
    deps: Deps, run_id: str, call_id: str, *, happened: bool, by: str, result: Any
) -> Effect:
    """A human resolves an in-doubt effect: it happened (with this result) or it did not.

    The effect is recorded and its pages settled in one transaction; `resume` then continues.
    """
    await deps.run(run_id)  # an unknown run says so, not "no effect"
    effect = await _effect(deps, run_id, call_id)
    if effect.status != EffectStatus.IN_DOUBT:
        raise errors.InvalidRequest(
            f"effect {call_id} of run {run_id} is {effect.status.value}, not in doubt"
        )
    now = deps.clock()
    if happened and result is None:
        result = await late_result(deps, run_id, call_id)
    outcome = EffectOutcome(
        run_id=run_id,
        call_id=call_id,
        status=EffectStatus.COMPLETED if happened else EffectStatus.FAILED,
        result=(result if result is not None else {"happened": True, "according_to": by})
        if happened
        else None,
        error=None if happened else f"did not happen, according to {by}",
        finished_at=now,
    )
    event = AuditEvent(
        action="resolve_in_doubt",
        actor=by,
        run_id=run_id,
        at=now,
        detail={"call_id": call_id, "happened": happened},
    )
    settle = PageSettlement(call_id=call_id, by=by, at=now)
    try:
        await deps.store.commit(
            Batch(
                run_id=run_id,
                finish=[outcome],
                settle_pages=[settle],
                events=[event],
                spend=[_spent(call_id, happened)],
            )
        )
    except store_errors.Conflict:
        raise errors.InvalidRequest(f"effect {call_id} was resolved meanwhile") from None
    return await _effect(deps, run_id, call_id)


def _spent(call_id: str, happened: bool) -> SpendChange:
    """What a resolved call's holds become: spent if it happened, given back if not."""
    if happened:
        return SpendChange(call_id, "settle")
    return SpendChange(call_id, "release", "did not happen")


async def late_result(deps: Deps, run_id: str, call_id: str) -> Any:
    """What a worker fenced off the run reported its tool returned for this call, if it did
    (the evidence a person settles an in-doubt page from in one step)."""
    completed = {"call_id": call_id, "status": EffectStatus.COMPLETED.value}
    for event in reversed(await deps.store.list_events(run_id=run_id)):
        if event.action == "late_result" and completed.items() <= event.detail.items():
            return event.detail.get("result")
    return None


async def after_stop(deps: Deps, run: Run) -> Run:
    """Tell the notifier a run ended; compensate it if its agent asks for a saga."""
    if run.status not in TERMINAL_STATUSES:
        return run
    log.info(
        "run %s %s at step %d (%s)",
        run.id,
        run.status.value,
        run.step,
        run.stop_reason,
        extra={"run_id": run.id, "step": run.step, "event": "run_finished"},
    )
    await deps.announcer.run_finished(run)
    await saga(deps, run)
    return run


def compensated(deps: Deps, run: Run) -> bool:
    """Whether the run ended in a way its saga agent undoes (so it may not resume)."""
    agent = deps.agents.get(run.agent)
    if agent is None or agent.on_failure != "compensate":
        return False
    kept = BUDGET_REASONS | {
        StopReason.IN_DOUBT,
        StopReason.ROLLED_BACK,
        StopReason.CONFLICT,
        StopReason.ARGS_MISMATCH,
    }
    return run.status == RunStatus.CANCELLED or (
        run.status == RunStatus.FAILED and run.stop_reason not in kept
    )


async def saga(deps: Deps, run: Run) -> None:
    """Undo an abandoned run's effects (stopped by a budget or in doubt, it is not), or those
    in flight when a cancel that asked for it came, once they have ended."""
    only: list[str] | None = None
    by, allow = None, False
    if not compensated(deps, run):
        only, asked = await _ended_to_compensate(deps, run)
        if not only or asked is None:
            return
        by, allow = asked.actor, bool(asked.detail.get("compensate_shared"))
    try:
        await compensate_all(deps, run, only=only, by=by, compensate_shared=allow)
    except errors.RunBusy:
        log.info("run %s: its driver compensates it when it stops", run.id)


async def _ended_to_compensate(deps: Deps, run: Run) -> tuple[list[str], AuditEvent | None]:
    """The calls the run's cancel asked to compensate that have completed and are not yet
    compensated (one still running is left to the driver, which comes back here after it),
    and the cancel that asked (who, and whether it may undo what other runs rely on)."""
    if run.status != RunStatus.CANCELLED:
        return [], None
    cancel: AuditEvent | None = None
    for event in await deps.store.list_events(run_id=run.id):
        if event.action == "cancel":
            cancel = event
    asked = list(cancel.detail.get("compensate") or []) if cancel else []
    if not asked:
        return [], None
    effects = {e.call_id: e for e in await deps.store.list_effects(run.id)}
    ended = [
        c
        for c in asked
        if c in effects
        and effects[c].status == EffectStatus.COMPLETED
        and effects[c].compensated_by is None
    ]
    return ended, cancel


async def _append_status(
    deps: Deps, run_id: str, status: RunStatus, reason: StopReason, event: AuditEvent
) -> None:
    """Append a status change on top of whatever the latest checkpoint is (CAS, retried)."""
    for _ in range(20):
        state = await deps.store.load_state(run_id)
        if state.status in (RunStatus.DONE, RunStatus.CANCELLED):
            raise errors.InvalidRequest(f"run {run_id} is already {state.status.value}")
        checkpoint = Checkpoint(
            run_id=run_id,
            seq=state.seq + 1,
            step=state.step,
            status=status,
            usage=state.usage,
            stop_reason=reason,
            created_at=deps.clock(),
        )
        idle = [SpendChange(None, "idle", f"the run was {status.value}")]  # calls never run
        batch = Batch(run_id=run_id, checkpoints=[checkpoint], events=[event], spend=idle)
        try:
            await deps.store.commit(batch)
            return
        except store_errors.Conflict:
            await asyncio.sleep(0.01)
    raise errors.RunBusy(f"run {run_id} kept changing; try again")


async def _effect(deps: Deps, run_id: str, call_id: str) -> Effect:
    try:
        return await deps.store.get_effect(run_id, call_id)
    except store_errors.NotFound:
        raise errors.InvalidRequest(f"run {run_id} has no effect {call_id!r}") from None
