"""Untrusted text made inert wherever it is shown as plain text: a terminal, a log line, a
plain-text field. Control characters (C0 but newline and tab, DEL, C1) and the bidirectional
overrides that reorder what is shown ("52 dnufer") are written out as escapes, e.g. ESC as
`\\x1b`; `flat` puts text on one line.

Every surface uses it and none owns it: Slack's escapes (`bot.slack.escape`) add mrkdwn's
on top, the CLI's tables and the logs use it as it is.
"""

from __future__ import annotations

CONTROLS = (*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0))
BIDI = (0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))


def _inert(code: int) -> str:
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


PLAIN: dict[int, str] = {code: _inert(code) for code in (*CONTROLS, *BIDI)}
"""`str.translate` table: each control character and override to its written-out escape."""


def plain(text: str) -> str:
    """`text` with its control characters and bidirectional overrides written out."""
    return text.translate(PLAIN)


def flat(text: str) -> str:
    """One line: runs of whitespace (newlines, tabs, C0 separators) become one space.

    For headers, list rows and inline text, where a newline from an agent could forge a
    line of the card (a fake "Asked by …").
    """
    return " ".join(text.split())
