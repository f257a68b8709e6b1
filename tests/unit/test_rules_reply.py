"""`/runs rules`: each rule's id and condition are code spans (to copy into `/runs revoke`),
the rest escaped text, and nothing of the escaping shows through."""

from __future__ import annotations

from bot.slack import escape
from bot.slack import similar

ROW = {
    "source": "learned",
    "id": "lr_b47f0870f806",
    "status": "active",
    "tool": "issue_refund",
    "when": "args.amount_cents <= 2500 && args.note != '<b>'",
    "reason": "small refunds are fine",
    "author": "U0BOB",
    "expires": "2026-12-30",
    "uses": 0,
}


def test_a_rule_line_shows_its_condition_as_code_where_it_stands() -> None:
    [line] = similar.rules_reply([ROW])["text"].splitlines()

    tool = escape.mrkdwn("issue_refund")  # underscores kept from turning into italics
    assert line.startswith(f"`lr_b47f0870f806`  [active]  {tool}  `args.amount_cents &lt;= 2500")
    assert "&amp;&amp; args.note != '&lt;b&gt;'`  — small refunds are fine" in line
    assert "\\x00" not in line
    assert "\0" not in line
    assert line.endswith("used 0x)")


def test_no_rules_says_so() -> None:
    assert similar.rules_reply([])["text"] == "No approval rules."
