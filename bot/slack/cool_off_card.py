"""What an approved call's card says after its decision under a policy's `cool_off` and
`undo_for` (issue 42.6): "Runs in 4m" with Cancel while it waits, who cancelled it, that it
is running (Undo is offered only once its effect completed), that it failed or is in doubt
(nothing to undo), Undo while its undo window is open, that an undo is under way or failed
(and why: Undo again), who undid it. Pure: blocks from the approval and now."""

from __future__ import annotations

import math
from datetime import datetime

from bot.slack import blocks as kit
from bot.slack import escape
from bot.slack import texts
from bot.slack.actions import Action
from bot.slack.blocks import Block
from runtime.records import Approval

COOL_OFF_BLOCK = "cool_off:"


def cool_off_blocks(approval: Approval, now: datetime | None) -> list[Block]:
    """The card's lines (and button) about its call's cool-off or undo; none if it has
    neither."""
    state, until = approval.cool_off, approval.cool_off_until
    if state == "waiting" and until is not None:
        left = _minutes(until, now)
        cancel = kit.button(texts.CANCEL_COOL_OFF, Action.CANCEL_COOL_OFF, approval.id)
        return [
            kit.context(texts.runs_in(left, kit.date(until))),
            kit.actions(COOL_OFF_BLOCK + approval.id, [cancel]),
        ]
    if state == "cancelled":
        return [kit.context(texts.cool_off_cancelled(kit.mention(approval.cool_off_by)))]
    if state != "ran":
        return []
    if approval.undone_by is not None:
        at = kit.date(approval.undone_at) if approval.undone_at else None
        return [kit.context(texts.undone(kit.mention(approval.undone_by), at))]
    if approval.undoing_by is not None:
        return [kit.context(texts.undoing(kit.mention(approval.undoing_by)))]
    if approval.ran_outcome != "completed":
        return _not_undoable(approval)
    undo_until = approval.undo_until
    error = approval.undo_error
    said = [kit.context(texts.undo_failed(escape.mrkdwn(error, limit=1500)))] if error else []
    if undo_until is None or (now is not None and now >= undo_until):
        return said
    undo = kit.button(texts.UNDO, Action.UNDO, approval.id, style="danger")
    return [
        *said,
        kit.context(texts.undo_until(kit.date(undo_until))),
        kit.actions(COOL_OFF_BLOCK + approval.id, [undo]),
    ]


def _not_undoable(approval: Approval) -> list[Block]:
    """A call still running, or whose effect failed or is in doubt: no Undo, and why."""
    if approval.ran_outcome is None:
        return [kit.context(texts.RUNNING_NO_UNDO_YET)] if approval.undo_seconds else []
    if approval.ran_outcome == "failed":
        return [kit.context(texts.RAN_AND_FAILED)]
    return [kit.context(texts.RAN_IN_DOUBT)]


def _minutes(until: datetime, now: datetime | None) -> int | None:
    """Whole minutes left, rounded up (None: no clock to tell)."""
    if now is None:
        return None
    return max(0, math.ceil((until - now).total_seconds() / 60))
