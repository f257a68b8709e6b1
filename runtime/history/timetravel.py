"""Time travel: a run's history, its exact state at any step, and forks from a step.

Steps are those of the run's current timeline: after a rollback to step k, the steps after k
that it undid are no longer served (nor forked from); they stay in the history, marked
`rolled_back`. A fork is a new run in the same lineage, so every effect its parent completed
is found by idempotency key and returned, never executed again (docs/architecture.md rule 2).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Sequence

from pydantic import TypeAdapter
from pydantic import ValidationError

from runtime import errors
from runtime.deps import Deps
from runtime.history.undo_log import unfinished
from runtime.model import identity
from store import AuditEvent
from store import Checkpoint
from store import Effect
from store import EffectStatus
from store import Message
from store import Reversibility
from store import Run
from store import RunState
from store import RunStatus
from store import errors as store_errors

log = logging.getLogger("signoff.timetravel")
_MESSAGES = TypeAdapter(list[Message])


async def history(deps: Deps, run_id: str) -> list[Checkpoint]:
    await deps.run(run_id)
    return await deps.store.history(run_id)


async def state_at(deps: Deps, run_id: str, step: int) -> RunState:
    run = await deps.run(run_id)
    if step < 0:
        raise errors.InvalidRequest("a step is 0 or more")
    try:
        return await deps.store.load_state(run_id, step=step)
    except store_errors.NotFound:
        first = run.fork_step or 0
        raise errors.InvalidRequest(
            f"run {run_id} has no step {step} (its steps run from {first} to {run.step})"
        ) from None


async def effects_after(deps: Deps, run_id: str, step: int) -> list[Effect]:
    """Effects after `step` that happened in the world: completed, not reads, not undone."""
    await deps.run(run_id)
    return [
        e
        for e in await deps.store.list_effects(run_id)
        if e.step > step
        and e.status == EffectStatus.COMPLETED
        and e.reversibility != Reversibility.READ
        and e.compensated_by is None
        and e.compensates is None
    ]


async def fork(
    deps: Deps,
    run_id: str,
    from_step: int,
    modify: Callable[[list[Message]], Sequence[Message]] | None,
    *,
    dry_run: bool,
    requested_by: str | None,
    drive: Callable[[str], Awaitable[object]],
) -> str:
    """Start a run in the same lineage from the state at `from_step`, edited by `modify`.

    Everything it needs is checked first, and the fork is created with its first checkpoint
    and its audit event in one transaction: a refused fork leaves nothing behind."""
    parent = await deps.run(run_id)
    await _check_forkable(deps, parent)
    state = await state_at(deps, run_id, from_step)
    messages = _modified(list(state.messages), modify)
    happened = await effects_after(deps, run_id, from_step)
    for effect in happened:
        log.info(
            "fork of %s from step %d: %s (step %d) already happened and will not run again",
            run_id,
            from_step,
            effect.tool,
            effect.step,
        )
    new_id = f"{parent.lineage_id}-fork-{uuid.uuid4().hex[:8]}"
    now = deps.clock()
    run = Run(
        id=new_id,
        agent=parent.agent,
        task=parent.task,
        budget=parent.budget,
        requested_by=requested_by or parent.requested_by,
        lineage_id=parent.lineage_id,
        parent_id=parent.id,
        fork_step=from_step,
        dry_run=dry_run,
        model=identity(deps.agent(parent.agent).model),
        created_at=now,
        updated_at=now,
    )
    snapshot = Checkpoint(
        run_id=new_id,
        seq=0,
        step=state.step,
        snapshot=True,
        status=RunStatus.RUNNING,
        usage=state.usage,
        messages=tuple(messages),
        created_at=now,
    )
    event = AuditEvent(
        action="fork",
        actor=requested_by or deps.worker_id,
        run_id=new_id,
        at=now,
        detail={
            "parent": run_id,
            "from_step": from_step,
            "dry_run": dry_run,
            "already_happened": [f"{e.tool}:{e.call_id}" for e in happened],
        },
    )
    await deps.store.create_run(run, snapshot, events=[event])
    await drive(new_id)
    return new_id


async def _check_forkable(deps: Deps, parent: Run) -> None:
    """A fork needs its agent here, and a parent whose rollback is not half done."""
    if parent.agent not in deps.agents:
        known = ", ".join(deps.agents) or "none"
        raise errors.UnknownAgent(
            f"run {parent.id} needs agent {parent.agent!r} to fork; this runtime has: {known}"
        )
    if await unfinished(deps.store, parent.id) is not None:
        raise errors.InvalidRequest(
            f"run {parent.id}: a rollback of it was interrupted; recovery finishes it (or run "
            "the rollback again) before it can be forked"
        )


def _modified(
    messages: list[Message], modify: Callable[[list[Message]], Sequence[Message]] | None
) -> list[Message]:
    if modify is None:
        return messages
    try:
        return _MESSAGES.validate_python(list(modify(messages)))
    except ValidationError as exc:
        raise errors.InvalidRequest(f"modify returned invalid messages: {exc}") from None
