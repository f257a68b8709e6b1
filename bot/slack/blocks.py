"""Block Kit pieces as plain dicts, each held inside Slack's limits whatever it is given.

The surfaces built from them live in `bot.slack.cards` (approval card, reminders, notes,
pages) and `bot.slack.replies` (`/runs` replies, App Home, modals); every one of them can
also be imported from here. Text handed to `md` and `section` must already be safe mrkdwn
(built with `bot.slack.escape`); text handed to a plain_text piece may be anything.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from collections.abc import Sequence
from datetime import UTC
from datetime import datetime
from typing import Any

from bot.inert import flat
from bot.slack import escape
from bot.slack import texts

Block = dict[str, Any]

MAX_BLOCKS = 50
MAX_VIEW_BLOCKS = 100
HEADER_TEXT = 150
SECTION_TEXT = 3000
MAX_FIELDS = 10
FIELD_TEXT = 2000
CONTEXT_ELEMENTS = 10
CONTEXT_TEXT = 2000
ACTIONS_ELEMENTS = 25
BUTTON_TEXT = 75
BUTTON_VALUE = 2000
CONFIRM_TITLE = 100
CONFIRM_TEXT = 300
CONFIRM_BUTTON = 30
ID_LENGTH = 255
MODAL_TITLE = 24
PRIVATE_METADATA = 3000
INPUT_VALUE = 3000
LABEL_TEXT = 2000
PLACEHOLDER_TEXT = 150
FALLBACK_TEXT = 3000
"""Our own bound on a message's `text` (Slack truncates at 40,000)."""

# ids the outbox and the reconciler match on (action and modal ids: bot.slack.actions)
APPROVAL_BLOCK = "approval:"
PAGE_BLOCK = "page:"
APPROVAL_EVENT = "signoff_approval"
PAGE_EVENT = "signoff_page"
REMINDER_EVENT = "signoff_reminder"

_USER_ID = re.compile(r"[UW][A-Z0-9]{2,}")
_GROUP_ID = re.compile(r"S[A-Z0-9]{2,}")


# text objects


def md(text: str, *, limit: int = SECTION_TEXT) -> Block:
    return {"type": "mrkdwn", "text": escape.cut(text, limit), "verbatim": True}


def pt(text: str, *, limit: int = SECTION_TEXT) -> Block:
    return {"type": "plain_text", "text": escape.plain(flat(text), limit=limit) or " "}


def is_user_id(ident: str | None) -> bool:
    return ident is not None and _USER_ID.fullmatch(ident) is not None


def mention(user_id: str | None) -> str:
    """`<@U…>` for a well-formed Slack user id; anything else is shown as escaped text."""
    if user_id is None:
        return texts.UNKNOWN_PERSON
    if is_user_id(user_id):
        return f"<@{user_id}>"
    return escape.mrkdwn(flat(user_id), limit=80)


def target(ident: str) -> str:
    """An escalation target: a user (`<@U…>`) or a user group (`<!subteam^S…>`)."""
    if _GROUP_ID.fullmatch(ident):
        return f"<!subteam^{ident}>"
    return mention(ident)


def date(moment: datetime) -> str:
    """A date every reader sees in their own time zone, with a UTC fallback."""
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    fallback = moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"<!date^{int(moment.timestamp())}^{{date_short_pretty}} at {{time}}|{fallback}>"


# blocks


def header(text: str) -> Block:
    return {"type": "header", "text": pt(text, limit=HEADER_TEXT)}


def section(text: str) -> Block:
    return {"type": "section", "text": md(text)}


def fields(items: Sequence[str]) -> Block:
    return {"type": "section", "fields": [md(i, limit=FIELD_TEXT) for i in items[:MAX_FIELDS]]}


def context(*items: str) -> Block:
    elements = [md(i, limit=CONTEXT_TEXT) for i in items if i][:CONTEXT_ELEMENTS]
    return {"type": "context", "elements": elements}


def divider() -> Block:
    return {"type": "divider"}


def actions(block_id: str, elements: Sequence[Block]) -> Block:
    return {
        "type": "actions",
        "block_id": block_id[:ID_LENGTH],
        "elements": list(elements[:ACTIONS_ELEMENTS]),
    }


def button(
    text: str,
    action_id: str,
    value: str,
    *,
    style: str | None = None,
    confirm: Block | None = None,
) -> Block:
    element: Block = {
        "type": "button",
        "action_id": action_id[:ID_LENGTH],
        "text": pt(text, limit=BUTTON_TEXT),
        "value": value[:BUTTON_VALUE],
    }
    if style:
        element["style"] = style
    if confirm:
        element["confirm"] = confirm
    return element


def confirm(title: str, text: str, *, ok: str, back: str) -> Block:
    return {
        "title": pt(title, limit=CONFIRM_TITLE),
        "text": pt(text, limit=CONFIRM_TEXT),
        "confirm": pt(ok, limit=CONFIRM_BUTTON),
        "deny": pt(back, limit=CONFIRM_BUTTON),
    }


def sections(lines: Iterable[str]) -> list[Block]:
    """Lines packed into as few sections as their text limit allows."""
    out: list[Block] = []
    chunk = ""
    for line in lines:
        line = escape.cut(line, SECTION_TEXT)
        if chunk and len(chunk) + 1 + len(line) > SECTION_TEXT:
            out.append(section(chunk))
            chunk = ""
        chunk = f"{chunk}\n{line}" if chunk else line
    if chunk:
        out.append(section(chunk))
    return out


def text_input(
    block_id: str,
    label: str,
    *,
    multiline: bool = False,
    initial: str | None = None,
    placeholder: str | None = None,
    hint: str | None = None,
    max_length: int = INPUT_VALUE,
) -> Block:
    """A required plain_text_input whose action_id is its block_id."""
    element: Block = {
        "type": "plain_text_input",
        "action_id": block_id[:ID_LENGTH],
        "multiline": multiline,
        "max_length": max_length,
    }
    if initial is not None:
        element["initial_value"] = initial[:max_length]
    if placeholder:
        element["placeholder"] = pt(placeholder, limit=PLACEHOLDER_TEXT)
    block: Block = {
        "type": "input",
        "block_id": block_id[:ID_LENGTH],
        "optional": False,
        "label": pt(label, limit=LABEL_TEXT),
        "element": element,
    }
    if hint:
        block["hint"] = pt(hint, limit=LABEL_TEXT)
    return block


# payloads


def message(text: str, blocks: Sequence[Block], **extra: Any) -> dict[str, Any]:
    """A message: `text` is the notification fallback, always sent with the blocks."""
    return {"text": escape.cut(text, FALLBACK_TEXT), "blocks": list(blocks[:MAX_BLOCKS]), **extra}


def modal(
    callback_id: str,
    private_metadata: str,
    *,
    title: str,
    blocks: Sequence[Block],
    close: str,
    submit: str | None = None,
) -> dict[str, Any]:
    view: dict[str, Any] = {
        "type": "modal",
        "callback_id": callback_id[:ID_LENGTH],
        "private_metadata": private_metadata[:PRIVATE_METADATA],
        "title": pt(title, limit=MODAL_TITLE),
        "close": pt(close, limit=MODAL_TITLE),
        "blocks": list(blocks[:MAX_VIEW_BLOCKS]),
    }
    if submit:
        view["submit"] = pt(submit, limit=MODAL_TITLE)
    return view


def ephemeral(text: str, blocks: Sequence[Block]) -> dict[str, Any]:
    return {"response_type": "ephemeral", **message(text, blocks)}


def metadata(event_type: str, **payload: str | None) -> dict[str, Any]:
    """Slack message metadata; keys whose value is unknown are left out."""
    present = {k: v for k, v in payload.items() if v is not None}
    return {"event_type": event_type, "event_payload": present}
