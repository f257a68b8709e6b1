"""What an agent on another stack that asked for an approval may say about it later: that it
still waits for the answer (a heartbeat, `keep_waiting`), and that it stopped waiting
(`withdraw`, allowed only to whoever asked: `may_withdraw`).

A waiter's heartbeat is kept on the approval (`waiter_until`, by the database's clock); when
it lapses with the approval still pending, the desk's timers record that nobody waits now
(`waiter_left_at`) and the card says so. A withdrawal is the system declining the approval
with the reason `withdrawn: ...`, like a cancelled run's: not a person's "no", so the same
call may be asked again; a decision made after it changes nothing.
"""

from __future__ import annotations

from datetime import timedelta

from runtime import errors
from runtime.approvals.desk import ApprovalDesk
from runtime.approvals.naming import decided_text
from runtime.approvals.policy import SYSTEM_ACTOR
from runtime.deps import Deps
from runtime.permissions import asked_by
from store import Approval
from store import ApprovalState

MIN_GRACE = 2.0
MAX_GRACE = 10.0
"""A heartbeat covers the wait it announces and a grace of as long again (2-10 s), for the
moment between one long poll and the next."""


def grace(seconds: float) -> float:
    return min(max(seconds, MIN_GRACE), MAX_GRACE)


def may_withdraw(approval: Approval, actor: str) -> bool:
    """Who may take a request for approval back: the API token that made it, and no one
    else (a person declines instead). The permission table's `withdraw` row."""
    return asked_by(approval, actor)


async def withdraw(
    desk: ApprovalDesk, approval_id: str, *, by: str, reason: str
) -> tuple[Approval, bool]:
    """Decline a pending approval because its asker stopped waiting (`reason`, as a person
    reads it), for the asker `by` only: (the approval, True). Withdrawn already: (it,
    False); decided otherwise: refused (`AlreadyDecided`)."""
    approval = await desk.get(approval_id)
    if not may_withdraw(approval, by):
        raise errors.NotTheAsker(
            f"only the token that asked for approval {approval_id} may withdraw it; "
            "nothing changed",
            approval_id=approval_id,
            by=by,
        )
    if approval.withdrawn:
        return approval, False
    if approval.state != ApprovalState.PENDING:
        raise errors.AlreadyDecided(decided_text(approval), approval=approval)
    try:
        withdrawn = await desk.record_decision(
            approval,
            ApprovalState.DECLINED,
            by=SYSTEM_ACTOR,
            reason=f"withdrawn: {reason}",
            resume=False,
        )
    except errors.AlreadyDecided as exc:  # decided meanwhile: withdrawn too, or an answer
        decided = getattr(exc, "approval", None)
        if isinstance(decided, Approval) and decided.withdrawn:
            return decided, False
        raise
    return withdrawn, True


async def keep_waiting(deps: Deps, approval_id: str, seconds: float) -> None:
    """Someone waits for this approval's answer `seconds` more (its long poll or event
    stream): the heartbeat on the approval moves on. Nothing for one already decided, nor
    for a run's (the run itself waits for the answer, whoever else looks)."""
    until = seconds + grace(seconds)
    fresh = await deps.store.record_waiter(approval_id, seconds=until)
    if fresh:  # nobody's wait was live: the scheduler must look when this one lapses
        deps.announcer.on_due(deps.clock() + timedelta(seconds=until))
