"""Slack's timed notes about learned rules: the author's DM a day before a rule expires, and
one quiet threaded note per batch of a rule's auto-approvals under the card it grew from.

The server's scheduler marks what is due through `Runtime.rules`; each mark writes its
outbox row in the same transaction, and the outbox sender delivers it with backoff like
every other post (`bot.slack.delivery`), so a Slack outage delays a note but cannot lose
it. This module holds the schedule's two steps and the notes' texts."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence

from bot.slack import escape
from runtime import Runtime
from runtime.records import LearnedRule


def expiry_reminder(rule: LearnedRule) -> str:
    return (
        f"Your approval rule {escape.code(rule.id)} for {escape.code(rule.tool)} expires "
        f"{rule.expires_at:%Y-%m-%d %H:%M} UTC; it approved {rule.uses} request(s). "
        f"Make it again from a card to keep it, or `/runs revoke {rule.id}` to end it now."
    )


async def remind_expiring(rt: Runtime, wake: Callable[[], None]) -> int:
    """Queue each due author's DM that their rule expires within a day, once (the mark and
    the outbox row are one transaction); wake the sender if any was queued."""
    due = len(await rt.rules.expiring())
    if due:
        wake()
    return due


NOTE_LIMIT = 10


def uses_note(rule_id: str, approvals: Sequence[tuple[str, str | None]]) -> str:
    """One quiet line for a batch of a rule's auto-approvals: (approval id, run id) each."""
    shown = [
        f"{escape.code(ap)}" + (f" (run {escape.code(run)})" if run else "")
        for ap, run in approvals[:NOTE_LIMIT]
    ]
    more = len(approvals) - NOTE_LIMIT
    rest = f", and {more} more" if more > 0 else ""
    count = len(approvals)
    return (
        f"Rule {escape.code(rule_id)} approved {count} similar request"
        f"{'s' if count > 1 else ''} at once: {', '.join(shown)}{rest}."
    )


async def note_uses(rt: Runtime, wake: Callable[[], None]) -> int:
    """Queue, under the card each rule grew from, one threaded note per batch of its uses
    (not broadcast to the channel), so a busy hour is one line, not a line per approval."""
    queued = len(await rt.rules.uses_to_tell())
    if queued:
        wake()
    return queued
