"""What a person is told when Slack refuses their click: one sentence, in their terms.

The runtime's errors carry data (the approval, the page); the words are chosen here.
"""

from __future__ import annotations

from datetime import datetime

from bot.slack.escape import mrkdwn
from runtime import errors
from runtime.records import Approval, ApprovalState


def refusal(exc: Exception) -> str:
    if isinstance(exc, errors.ApprovalExpired):
        return "This approval expired before your decision; it was declined as expired."
    if isinstance(exc, errors.AlreadyDecided):
        approval = getattr(exc, "approval", None)
        return already_decided(approval) if approval else "This approval was already decided."
    if isinstance(exc, errors.NotAnApprover):
        return "You are not an approver for this action, so your click changed nothing."
    if isinstance(exc, errors.SelfApproval):
        return "You asked for this action, and its policy does not let you approve it yourself."
    if isinstance(exc, errors.AlreadyVoted):
        return f"You already approved this; {mrkdwn(str(exc).split('; ', 1)[-1])}."
    if isinstance(exc, errors.KeyConflict):
        return f"Not approved, nothing was done: {mrkdwn(str(exc))}"
    if isinstance(exc, errors.EditRefused):
        return f"These arguments cannot be approved: {mrkdwn(str(exc))}"
    if isinstance(exc, errors.ApprovalNotFound):
        return "There is no such approval any more (it may have been pruned)."
    if isinstance(exc, errors.PageNotFound):
        return "There is no such page any more."
    if isinstance(exc, errors.AlreadyAcknowledged):
        page = getattr(exc, "page", None)
        who = f"<@{page.acknowledged_by}>" if page and _is_user(page.acknowledged_by) else "someone"
        when = _when(page.acknowledged_at) if page else ""
        return f"{who} already acknowledged this page{when}."
    return f"That did not work: {mrkdwn(str(exc))}"


def already_decided(approval: Approval) -> str:
    who = approval.decided_by or "someone"
    by = f"<@{who}>" if _is_user(who) else mrkdwn(who)
    when = _when(approval.decided_at)
    reason = approval.reason or ""
    if approval.state == ApprovalState.APPROVED:
        return f"Already approved by {by}{when}."
    if reason == "expired":
        return f"This approval expired{when} and was declined; it cannot be decided any more."
    if reason.startswith("withdrawn"):
        return f"This approval was withdrawn{when} ({mrkdwn(reason)}); there is nothing to decide."
    because = f": {mrkdwn(reason)}" if reason else ""
    return f"Already declined by {by}{when}{because}."


def _when(at: datetime | None) -> str:
    if at is None:
        return ""
    epoch = int(at.timestamp())
    return f" at <!date^{epoch}^{{date_short_pretty}} {{time}}|{at:%Y-%m-%d %H:%M} UTC>"


def _is_user(who: str | None) -> bool:
    if not who:
        return False
    return who[0] in "UW" and who[1:].isalnum() and who.isupper()
