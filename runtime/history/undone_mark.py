"""The `undone` checkpoint (issue 42.6): a run that ended done, then had a call undone,
reads `undone` on every surface. It commits in the same transaction as the undo's end (the
`compensate` event), so a worker that dies in between leaves both for recovery, never a
compensation finished on a run that still reads done."""

from __future__ import annotations

from runtime.deps import Deps
from runtime.runs import StopReason
from store import Checkpoint, RunStatus

MARKS = "approval_id"
"""The key in an undo's intent (`undo_started` detail) naming the approval whose call it
undoes: only such an undo marks its run."""


async def checkpoint(deps: Deps, run_id: str) -> Checkpoint | None:
    """The checkpoint that makes a run that ended done (it answered, nothing declined or
    failed) read `undone`; None for a run still going, one that ended otherwise, or one
    marked already."""
    latest = await deps.store.load_state(run_id)
    answered = latest.stop_reason in (None, StopReason.ANSWERED)
    if latest.status != RunStatus.DONE or not answered:
        return None
    return Checkpoint(
        run_id=run_id,
        seq=latest.seq + 1,
        step=latest.step,
        status=latest.status,
        usage=latest.usage,
        stop_reason=StopReason.UNDONE,
        created_at=deps.clock(),
    )
