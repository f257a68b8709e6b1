"""Slack's timed notes about learned rules, run on the server's scheduler: the author's DM a
day before a rule expires, and one quiet threaded note per batch of a rule's auto-approvals
under the card it grew from. Each acts through `Runtime.rules`; posts are made once (the
rule is marked first), since a missed note delays no decision."""

from __future__ import annotations

import logging

from slack_sdk.web.async_client import AsyncWebClient

from bot.slack import escape
from runtime import Runtime
from runtime.rule_book import RuleUses
from store.records import LearnedRule

log = logging.getLogger("signoff.slack")


def expiry_reminder(rule: LearnedRule) -> str:
    return (
        f"Your approval rule {escape.code(rule.id)} for {escape.code(rule.tool)} expires "
        f"{rule.expires_at:%Y-%m-%d %H:%M} UTC; it approved {rule.uses} request(s). "
        f"Make it again from a card to keep it, or `/runs revoke {rule.id}` to end it now."
    )


async def remind_expiring(rt: Runtime, client: AsyncWebClient) -> int:
    """Tell each rule's author, in a DM, that it expires within a day, once (the rule is
    marked reminded first: a post that fails is not retried, a reminder is not a decision)."""
    told = 0
    for rule in await rt.rules.expiring():
        try:
            await client.chat_postMessage(channel=rule.author, text=expiry_reminder(rule))
            told += 1
        except Exception:
            log.exception("could not remind %s of rule %s", rule.author, rule.id)
    return told


NOTE_LIMIT = 10


def uses_note(uses: RuleUses) -> str:
    """One quiet line for a batch of a rule's auto-approvals."""
    shown = [
        f"{escape.code(ap)}" + (f" (run {escape.code(run)})" if run else "")
        for ap, run, _ in uses.approvals[:NOTE_LIMIT]
    ]
    more = len(uses.approvals) - NOTE_LIMIT
    rest = f", and {more} more" if more > 0 else ""
    count = len(uses.approvals)
    return (
        f"Rule {escape.code(uses.rule.id)} approved {count} similar request"
        f"{'s' if count > 1 else ''} at once: {', '.join(shown)}{rest}."
    )


async def note_uses(rt: Runtime, client: AsyncWebClient) -> int:
    """Under the card each rule grew from, one threaded note per batch of its uses (not
    broadcast to the channel), so a busy hour is one line, not a line per approval."""
    posted = 0
    for uses in await rt.rules.uses_to_tell():
        card = await rt.desk.get(uses.rule.from_approval or "")
        if not (card.channel and card.message_ts):
            continue
        try:
            await client.chat_postMessage(
                channel=card.channel, thread_ts=card.message_ts, text=uses_note(uses)
            )
            posted += 1
        except Exception:
            log.exception("could not note the uses of rule %s", uses.rule.id)
    return posted
