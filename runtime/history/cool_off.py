"""Cancelling an approved call in its cool-off, and undoing one that ran (issue 42.6).

A cancel is one compare-and-set on the approval (`waiting` -> `cancelled`); the run's own
claim to execute is another (`waiting` -> `ran`, only once the cool-off ended by the
database's clock), so a cancel that lands as the cool-off ends either wins, and nothing
runs, or loses, and the call runs: never both. The run then resumes and reads the cancel as
the call's result.

Undo is offered once the call's effect completed: its end, recorded with its result, opens
the window (`undo_until`); a call whose effect failed or is in doubt has nothing to undo.
An undo is a compare-and-set too (`undoing_by`, only while the window is open by the
database's clock and nobody undoes it), taken under the run's lease; its compensation is
the rollback's own (`rollback.compensate_all` of that one call id): the compensator runs as
an effect of its own with its own idempotency key, the intent is audited first, and recovery
finishes an undo a crash interrupted. Two clicks at once: one compensation, one refusal. It
ends with the compensation: undone (`undone_by`) when it completed, else failed
(`undo_error`, on-call paged), and a person may try again: the compensator runs again under
the same key, so it never undoes twice. A run that had ended done reads `undone` once its
call is undone (a checkpoint on top, its status kept, in the transaction that ends the
undo, so recovery finishes both or neither), and one still going when its call was undone
reads `undone` when it ends (`runtime.runs.verdict`): no surface shows it as done.
"""

from __future__ import annotations

from collections.abc import Awaitable
from collections.abc import Callable

from runtime import errors
from runtime import lookups
from runtime.deps import Deps
from runtime.history.rollback import RollbackReport
from runtime.history.rollback import Undo
from runtime.history.rollback import compensate_all
from runtime.history.rollback import intent
from store import Approval
from store import AuditEvent
from store import Effect
from store import EffectStatus


async def cancel(
    deps: Deps, approval_id: str, *, by: str, resume_run: Callable[[str], Awaitable[None]]
) -> Approval:
    """`by` cancels the approved call waiting out its cool-off: it never runs, and its run
    goes on with the cancel as the call's result. `TooLate` (nothing changed) otherwise."""
    approval = await lookups.approval(deps.store, approval_id)
    if approval.cool_off != "waiting":
        raise errors.TooLate(_not_cancellable(approval), approval_id=approval_id)
    event = _event(deps, "cool_off_cancelled", approval, by)
    if not await deps.store.cancel_cool_off(approval.id, by=by, event=event):
        current = await lookups.approval(deps.store, approval_id)
        raise errors.TooLate(_not_cancellable(current), approval_id=approval_id)
    if approval.run_id is not None:
        await resume_run(approval.run_id)
    return await lookups.approval(deps.store, approval_id)


async def undo(deps: Deps, approval_id: str, *, by: str) -> RollbackReport:
    """`by` undoes the call the approval let run, through its tool's compensator, once and
    within the policy's `undo_for`. `TooLate` (nothing changed) otherwise; `RunBusy` if
    another worker drives the run right now (nothing changed: try again). A compensation
    that fails is in the report's `failed` (and on the approval's `undo_error`): the call is
    not undone, on-call was paged, and `by` may try again."""
    approval = await lookups.approval(deps.store, approval_id)
    effect = await _effect_of(deps, approval)
    if approval.run_id is None or approval.call_id is None or effect is None:
        raise errors.TooLate(_not_undoable(approval, effect), approval_id=approval_id)
    async with deps.locks.hold(approval.run_id), deps.lease(approval.run_id):
        event = _event(deps, "undo_requested", approval, by)
        only = [approval.call_id]
        undo = Undo(by, undoes=approval.id)
        started = intent(deps, approval.run_id, undo, to_step=0, restore=False, only=only)
        if not await deps.store.claim_undo(approval.id, by=by, events=[event, started]):
            current = await lookups.approval(deps.store, approval_id)
            raise errors.TooLate(_not_undoable(current, effect), approval_id=approval_id)
        run = await deps.run(approval.run_id)
        return await compensate_all(
            deps, run, only=only, by=by, intended=True, undoes=approval.id, retry=True
        )


async def _effect_of(deps: Deps, approval: Approval) -> Effect | None:
    """The completed effect the approved call made, if it made one."""
    if approval.run_id is None or approval.cool_off != "ran":
        return None
    for effect in await deps.store.list_effects(approval.run_id):
        if effect.call_id == approval.call_id and effect.compensates is None:
            return effect if effect.status == EffectStatus.COMPLETED else None
    return None


def _not_cancellable(approval: Approval) -> str:
    what = f"approval {approval.id} ({approval.tool})"
    if approval.cool_off == "cancelled":
        why = f"it was cancelled already by {approval.cool_off_by}"
    elif approval.cool_off == "ran":
        why = "its cool-off is over and the call ran"
    else:
        why = "it is not waiting out a cool-off"
    return f"{what} cannot be cancelled: {why}; nothing changed."


def _not_undoable(approval: Approval, effect: Effect | None) -> str:
    what = f"approval {approval.id} ({approval.tool})"
    if approval.undone_by is not None:
        when = f" at {approval.undone_at:%Y-%m-%d %H:%M:%S} UTC" if approval.undone_at else ""
        why = f"it was undone already by {approval.undone_by}{when}"
    elif approval.undoing_by is not None:
        why = f"{approval.undoing_by} is undoing it right now"
    elif approval.cool_off == "ran" and approval.ran_outcome is None:
        why = "its call is still running; Undo is offered once its effect completed"
    elif approval.ran_outcome == "failed":
        why = "its call failed, so there is nothing to undo"
    elif approval.ran_outcome == "in_doubt":
        why = "its call's outcome is in doubt (on-call was paged), so it cannot be undone blind"
    elif approval.cool_off != "ran" or effect is None:
        why = "its call has not run (or did not complete), so there is nothing to undo"
    elif approval.undo_until is None:
        why = "its policy allows no undo (undo_for)"
    else:
        why = f"the undo window closed at {approval.undo_until:%Y-%m-%d %H:%M:%S} UTC"
    return f"{what} cannot be undone: {why}; nothing changed."


def _event(deps: Deps, action: str, approval: Approval, by: str) -> AuditEvent:
    """The audit event of `by` acting on the approved call (cancel, undo), now."""
    return AuditEvent(
        action=action,
        actor=by,
        run_id=approval.run_id,
        approval_id=approval.id,
        at=deps.clock(),
        detail={"call_id": approval.call_id, "tool": approval.tool},
    )
