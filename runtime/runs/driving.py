"""Driving a run under its in-process lock and its lease: the step loop itself is
`runtime.runs.driver`; here are reopening a failed run, what follows once it stops, and resuming
the run a decision unblocked."""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from collections.abc import Callable

from tenacity import AsyncRetrying
from tenacity import retry_if_exception_type
from tenacity import stop_after_attempt
from tenacity import wait_exponential_jitter

from runtime import errors
from runtime.approvals import ensure_receipt
from runtime.deps import Deps
from runtime.model import identity
from runtime.ports import Approvals
from runtime.runs import ending
from runtime.runs.driver import Driver
from runtime.runs.telemetry import log_context
from store import TERMINAL_STATUSES
from store import Approval
from store import ApprovalState
from store import AuditEvent
from store import Batch
from store import Budget
from store import Checkpoint
from store import Run
from store import RunState
from store import RunStatus

log = logging.getLogger("signoff.runtime")

RESUME_ATTEMPTS = 8
"""A run busy elsewhere is tried again for about six seconds (doubling waits from 50 ms)."""


async def drive(deps: Deps, approvals: Approvals, run_id: str) -> Run:
    """Drive a run until it finishes or parks; a no-op if it is done or driven elsewhere.

    Called from inside this run's own driver (a notifier deciding at once), it returns at
    once: that driver reads the approval again after parking."""
    if deps.locks.held_here(run_id):
        return await deps.run(run_id)
    try:
        with log_context(run_id=run_id):
            return await drive_now(deps, approvals, run_id)
    except errors.RunBusy:
        log.info("run %s is driven by another worker", run_id)
        return await deps.run(run_id)


async def drive_now(
    deps: Deps,
    approvals: Approvals,
    run_id: str,
    *,
    reopen: bool = False,
    budget: Budget | None = None,
    override_model_by: str | None = None,
) -> Run:
    """Drive the run, or `RunBusy` if another worker holds it. `reopen` resumes a failed run;
    `budget` replaces its limits, written only once the lease is held. A run goes on with the
    model it started on: another one is refused (`ModelChanged`) unless a person chose it
    (`override_model_by`, audited)."""
    async with deps.locks.hold(run_id):
        run = await deps.run(run_id)
        agent = deps.agent(run.agent)
        if run.status in TERMINAL_STATUSES and not (reopen and run.status == RunStatus.FAILED):
            return run
        model = identity(agent.model)
        changed = run.model is not None and model is not None and run.model != model
        if changed and override_model_by is None:
            raise errors.ModelChanged(_model_changed(run, model), run_id=run_id)
        async with deps.lease(run_id):
            if budget is not None:  # only now: a refused resume changes nothing
                await deps.store.set_run_budget(run_id, budget, at=deps.clock())
                run = run.model_copy(update={"budget": budget})
            if changed and model is not None and override_model_by is not None:
                run = await _override_model(deps, run, model, by=override_model_by)
            state = await deps.store.load_state(run_id)
            if state.status == RunStatus.FAILED and reopen:
                state = await _reopen(deps, run, state)
            if state.status in TERMINAL_STATUSES:
                return await deps.run(run_id)
            ended = await Driver(deps, approvals, run, agent, state).drive()
        run = await deps.run(run_id)
        if ended:
            return await ending.after_stop(deps, run)
        if run.status == RunStatus.CANCELLED:  # cancelled under this driver, maybe elsewhere
            await ending.saga(deps, run)
        return run


def _model_changed(run: Run, model: dict[str, object] | None) -> str:
    return (
        f"run {run.id} started on {_named(run.model or {})}; this process is configured with "
        f"{_named(model or {})}, so it was not resumed. Resume it where its model is "
        "configured, or resume it here with an explicit override (`signoff runs resume "
        "--override-model-by USER`), which the audit records."
    )


def _named(model: dict[str, object]) -> str:
    return ", ".join(f"{k}={v}" for k, v in model.items() if v is not None) or "an unknown model"


async def _override_model(deps: Deps, run: Run, model: dict[str, object], *, by: str) -> Run:
    """A person chose to go on with another model: recorded on the run and in the audit."""
    await deps.store.set_run_model(run.id, dict(model), at=deps.clock())
    event = AuditEvent(
        action="model_override",
        actor=by,
        run_id=run.id,
        at=deps.clock(),
        detail={"was": run.model, "now": model},
    )
    await deps.store.record_event(event)
    log.warning("run %s goes on with %s instead of %s, as %s chose", run.id, _named(model),
                _named(run.model or {}), by)  # fmt: skip
    return run.model_copy(update={"model": model})


async def _reopen(deps: Deps, run: Run, state: RunState) -> RunState:
    checkpoint = Checkpoint(
        run_id=run.id,
        seq=state.seq + 1,
        step=state.step,
        status=RunStatus.RUNNING,
        usage=state.usage,
        created_at=deps.clock(),
    )
    event = AuditEvent(
        action="resume",
        actor=deps.worker_id,
        run_id=run.id,
        at=deps.clock(),
        detail={"was": state.stop_reason},
    )
    await deps.commit(Batch(run_id=run.id, checkpoints=[checkpoint], events=[event]))
    return await deps.store.load_state(run.id)


async def after_decision(
    deps: Deps,
    approval: Approval,
    *,
    resume: bool,
    resume_run: Callable[[str], Awaitable[None]],
) -> None:
    """What follows a recorded decision: sign its receipt, tell the notifier, resume the run
    it unblocks."""
    approval = await ensure_receipt(deps.store, deps.signer, approval)
    run = await deps.find_run(approval.run_id)
    await deps.announcer.approval_decided(approval, run)
    if run is not None and resume and approval.state != ApprovalState.PENDING:
        await resume_run(run.id)


async def resume_after_decision(deps: Deps, approvals: Approvals, run_id: str) -> None:
    """Drive the run a decision unblocked. Its driver elsewhere may be about to park: wait
    for it a few seconds; past that, or on an error, recovery picks the run up."""
    if deps.locks.held_here(run_id):
        return
    try:
        async for attempt in AsyncRetrying(
            retry=retry_if_exception_type(errors.RunBusy),
            stop=stop_after_attempt(RESUME_ATTEMPTS),
            wait=wait_exponential_jitter(multiplier=0.05, max=3.2, jitter=0.05),
            reraise=True,
        ):
            with attempt:
                await drive_now(deps, approvals, run_id)
    except errors.RunBusy:
        log.info("run %s is still driven elsewhere; recovery will resume it", run_id)
    except errors.ModelChanged as exc:
        log.warning("run %s was not resumed after a decision: %s", run_id, exc)
    except Exception:
        log.exception("run %s could not resume after a decision", run_id)
