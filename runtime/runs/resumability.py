"""Whether a stopped run may resume: refused, changing nothing, while a rollback of it is
unfinished, once it is done, cancelled or compensated, or while an effect of it that may not
run twice is in doubt."""

from __future__ import annotations

from runtime import errors
from runtime.deps import Deps
from runtime.history import unfinished_rollback
from runtime.runs.ending import compensated
from store import EffectStatus
from store import Run
from store import RunStatus


async def check_resumable(deps: Deps, run: Run) -> None:
    if await unfinished_rollback(deps.store, run.id) is not None:
        raise errors.InvalidRequest(
            f"run {run.id}: a rollback was interrupted; recovery finishes it (or run the "
            "rollback again) before the run can go on"
        )
    if run.status in (RunStatus.DONE, RunStatus.CANCELLED) or compensated(deps, run):
        why = "its effects were compensated" if compensated(deps, run) else run.status.value
        raise errors.InvalidRequest(
            f"run {run.id} is {why}; fork it to continue from one of its steps"
        )
    for effect in await deps.store.list_effects(run.id):
        if effect.status == EffectStatus.IN_DOUBT and not effect.idempotent:
            raise errors.EffectInDoubt(
                f"run {run.id}: {effect.tool} (call {effect.call_id}) is in doubt; check "
                "the outside system, then resolve it first",
                run_id=run.id,
                call_id=effect.call_id,
                tool=effect.tool,
            )
