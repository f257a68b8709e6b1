"""Untrusted text made inert for Slack: the one module that escapes what agents write.

Slack reads `&`, `<` and `>` as control characters. Every mention, channel link, broadcast
and disguised link (`<@U123>`, `<#C123>`, `<!channel>`, `<https://evil|bank.com>`) starts
with `<`, so escaping those three - `&` first, so an `&lt;` already in the text stays
literal - turns them all into text. Only these three: Slack decodes no other entity.

Styling (`*bold*`, `_x_`, `~x~`, backticks) cannot notify anyone, but it can change what an
approver reads, and mrkdwn has no backslash escape. So a word joiner (U+2060, invisible and
zero-width) goes on *both* sides of each marker. Slack opens a style on a marker that is at
a word start and followed by a non-space, and closes it on one preceded by a non-space and
followed by a word end. Whichever way it classes the joiner, every marker breaks one of
those rules: as a letter, each marker sits inside a word; as a space, an opening marker is
followed by one and a closing marker preceded by one. Text reads the same; ids and names
are shown with `code()` instead, which needs no joiners, so they stay copyable.

Control characters and the bidirectional overrides that reorder what is shown are written out
as escapes by the tables of `bot.inert`, which every surface shares; `flat` is its too.

Every text object that carries this text also sets `"verbatim": True`, so Slack does not
auto-link URLs or channel names in it (see `bot.slack.blocks.md`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from bot.inert import BIDI
from bot.inert import CONTROLS
from bot.inert import PLAIN
from bot.inert import flat

WORD_JOINER = "\u2060"

_JSON_INERT = re.compile("[" + "".join(f"\\u{c:04x}" for c in (*CONTROLS, *BIDI)) + "]")

_MRKDWN: dict[int, str] = {
    **PLAIN,
    ord("&"): "&amp;",
    ord("<"): "&lt;",
    ord(">"): "&gt;",
    **{ord(m): f"{WORD_JOINER}{m}{WORD_JOINER}" for m in "*_~`"},
}
# Inside a code span Slack applies no styling; only a backtick would end the span early.
_CODE: dict[int, str] = {
    **{k: v for k, v in _MRKDWN.items() if chr(k) not in "*_~`"},
    ord("`"): "\u02cb",
}


def mrkdwn(text: str, *, limit: int | None = None) -> str:
    """Untrusted text for a mrkdwn text object: literal, notifying no one, unstyled.

    With `limit`, the result (escapes and the cut note included) is at most `limit`
    characters, and the note counts the characters of `text` left out.
    """
    return _fit(text, _MRKDWN, limit)


def plain(text: str, *, limit: int | None = None) -> str:
    """Untrusted text for a plain_text object: Slack parses nothing there but control
    characters and bidirectional overrides are still written out inert."""
    return _fit(text, PLAIN, limit)


def code(text: str, *, limit: int | None = None) -> str:
    """An inline code span for ids, names and values meant to be copied, on one line.

    Slack styles nothing inside a code span, so it needs no joiners (which would be copied
    along); `&`, `<`, `>` and control characters are escaped, and a backtick, which would
    end the span, becomes U+02CB, a look-alike.
    """
    inner = _fit(flat(text), _CODE, None if limit is None else max(limit - 2, 1)) or " "
    return f"`{inner}`"


def preformatted(text: str, *, limit: int | None = None) -> str:
    """A code block (```), escaped as `code()` escapes a span, e.g. commands to copy."""
    inner = _fit(text, _CODE, None if limit is None else max(limit - 6, 1)) or " "
    return f"```{inner}```"


def json_text(value: Any, *, limit: int) -> str | None:
    """`value` as JSON to edit in a plain-text input: pretty if that fits in `limit`, else
    compact, else None (a cut JSON document would not parse). Control characters and
    bidirectional overrides inside strings become `\\uXXXX` escapes, so the text is inert
    and still parses to the same value."""
    for indent in (2, None):
        text = json.dumps(value, indent=indent, ensure_ascii=False, default=str)
        text = _JSON_INERT.sub(lambda m: f"\\u{ord(m[0]):04x}", text)
        if len(text) <= limit:
            return text
    return None


def cut(text: str, limit: int) -> str:
    """`text` in at most `limit` characters, a cut one ending in "… (N more characters)".

    For text that is already safe; cut untrusted text through `mrkdwn(text, limit=...)` or
    `plain(text, limit=...)`, which never split an escape.
    """
    return _fit(text, {}, limit)


def _fit(text: str, table: Mapping[int, str], limit: int | None) -> str:
    out = text.translate(table)
    if limit is None or len(out) <= limit:
        return out
    from bot.slack import texts  # only for what is cut: its words import the runtime's

    pieces = [table.get(ord(ch), ch) for ch in text]
    widest = texts.more_characters(len(text))
    if limit <= len(widest):
        kept = _take(pieces, limit - 1)
        return "".join(pieces[:kept]) + "…" if limit > 0 else ""
    kept = _take(pieces, limit - len(widest))
    return "".join(pieces[:kept]) + texts.more_characters(len(text) - kept)


def _take(pieces: Sequence[str], budget: int) -> int:
    """How many leading pieces fit in `budget` characters."""
    used = 0
    for count, piece in enumerate(pieces):
        used += len(piece)
        if used > budget:
            return count
    return len(pieces)
