"""The on-call page in Slack: what needs a human (an effect in doubt, or one nothing can
undo), the exact commands that settle it, and its Acknowledge button (with "It happened" /
"It did not happen" for a bot that settles in-doubt effects); the line under a page nobody
acknowledged yet.

Everything an agent or a requester wrote goes through `bot.slack.escape`.
"""

from __future__ import annotations

from typing import Any

from bot.inert import flat
from bot.settle import IN_DOUBT
from bot.settle import settle_commands
from bot.slack import blocks as kit
from bot.slack import escape
from bot.slack import texts
from bot.slack.action_text import ARG_NAME
from bot.slack.action_text import arg_fields
from bot.slack.actions import Action
from bot.slack.blocks import Block
from bot.slack.cards import DETAIL_TEXT
from bot.slack.cards import REASON_TEXT
from bot.slack.cards import ident_code
from runtime.display import Display
from runtime.records import Page
from runtime.records import Run


def page_message(
    page: Page,
    run: Run | None,
    *,
    args: dict[str, Any] | None = None,
    allow_resolve: bool = False,
    display: Display | None = None,
) -> dict[str, Any]:
    """An on-call page: what needs a human, and the exact commands that settle it.

    `allow_resolve` adds "It happened" / "It did not happen" buttons to an in-doubt page,
    for a bot that handles those actions.
    """
    tool = page.tool or texts.AN_EFFECT
    run_id = page.run_id or (run.id if run else None)
    blocks = [kit.header(texts.page_header(tool, run_id)), kit.section(_page_body(page, run))]
    if args:
        blocks.append(kit.fields(arg_fields(args, None, slots=kit.MAX_FIELDS, display=display)))
    commands = settle_commands(page, run_id)
    if commands:
        blocks.append(kit.section(texts.settle(escape.preformatted("\n".join(commands)))))
    reason = escape.code(page.reason, limit=ARG_NAME)
    blocks.append(kit.context(texts.page_context(reason, ident_code(page.call_id))))
    if page.acknowledged_by:
        at = kit.date(page.acknowledged_at) if page.acknowledged_at else None
        blocks.append(kit.context(texts.acknowledged(kit.mention(page.acknowledged_by), at)))
    else:
        blocks.append(page_actions(page, resolve=allow_resolve and page.reason in IN_DOUBT))
    text = texts.page_fallback(
        escape.mrkdwn(flat(tool), limit=ARG_NAME),
        escape.mrkdwn(run_id, limit=ARG_NAME) if run_id else None,
        escape.mrkdwn(page.reason, limit=ARG_NAME),
    )
    return kit.message(text, blocks, metadata=kit.metadata(kit.PAGE_EVENT, page_id=page.id))


def page_reminder(page: Page) -> str:
    """One line under a page nobody acknowledged yet."""
    tool = escape.code(page.tool, limit=ARG_NAME) if page.tool else texts.AN_EFFECT
    return texts.page_reminder(tool, kit.date(page.created_at))


def _page_body(page: Page, run: Run | None) -> str:
    why = texts.PAGE_REASONS.get(page.reason) or escape.mrkdwn(page.reason, limit=ARG_NAME)
    detail = escape.mrkdwn(page.detail, limit=DETAIL_TEXT)
    task = escape.mrkdwn(flat(run.task), limit=REASON_TEXT) if run else None
    tool = escape.code(page.tool, limit=ARG_NAME) if page.tool else texts.AN_EFFECT
    return texts.page_body(tool, why, detail, task)


def page_actions(page: Page, *, resolve: bool = False) -> Block:
    """Acknowledge (and, when asked, the two ways to settle an in-doubt effect)."""
    buttons = [kit.button(texts.ACKNOWLEDGE, Action.ACKNOWLEDGE, page.id, style="primary")]
    if resolve:
        buttons.append(kit.button(texts.HAPPENED, Action.SETTLE_HAPPENED, page.id))
        buttons.append(kit.button(texts.DID_NOT_HAPPEN, Action.SETTLE_NOT_HAPPENED, page.id))
    return kit.actions(kit.PAGE_BLOCK + page.id, buttons)
