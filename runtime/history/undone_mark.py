"""The `undone` checkpoint (issue 42.6): a run that ended done, then had a call undone,
reads `undone` on every surface. It commits in the same transaction as the undo's end (the
`compensate` event), so a worker that dies in between leaves both for recovery, never a
compensation finished on a run that still reads done."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence

from runtime.deps import Deps
from runtime.runs import StopReason
from store import Checkpoint
from store import RunStatus
from store.base import UndoEnded

MARKS = "approval_id"
"""The key in an undo's intent (`undo_started` detail) naming the approval whose call it
undoes: only such an undo marks its run."""


def ended(undoes: str | None, paged: Sequence[str], failed: Mapping[str, str]) -> UndoEnded | None:
    """How a person's undo of the approval `undoes` ended (None: no person's undo): undone
    when no effect of its call was `paged` instead of compensated, else failed, saying why
    (`failed`, by call id)."""
    if undoes is None:
        return None
    if not paged:
        return UndoEnded(undoes)
    why = "; ".join(failed.get(call, f"{call} was not compensated") for call in paged)
    return UndoEnded(undoes, error=f"{why}; on-call was paged")


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
