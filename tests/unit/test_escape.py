"""Escaping untrusted text for Slack: every hostile case renders as literal text."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.inert import flat
from bot.slack import escape
from bot.slack import texts

WJ = "\u2060"


@pytest.mark.parametrize(
    ("hostile", "escaped"),
    [
        ("<!channel>", "&lt;!channel&gt;"),
        ("<!here>", "&lt;!here&gt;"),
        ("<!everyone>", "&lt;!everyone&gt;"),
        ("<@U123>", "&lt;@U123&gt;"),
        ("<#C123>", "&lt;#C123&gt;"),
        ("<!subteam^S123>", "&lt;!subteam^S123&gt;"),
        ("<https://evil|bank.com>", "&lt;https://evil|bank.com&gt;"),
        ("AT&T", "AT&amp;T"),
        ("&lt;!channel&gt;", "&amp;lt;!channel&amp;gt;"),
        ("*bold*", f"{WJ}*{WJ}bold{WJ}*{WJ}"),
        ("_x_", f"{WJ}_{WJ}x{WJ}_{WJ}"),
        ("~x~", f"{WJ}~{WJ}x{WJ}~{WJ}"),
        ("`x`", f"{WJ}`{WJ}x{WJ}`{WJ}"),
        ("```code```", f"{WJ}`{WJ}" * 3 + "code" + f"{WJ}`{WJ}" * 3),
        ("a\x1b[31mb", "a\\x1b[31mb"),
        ("\x00\x07\x0b\x0c\r\x7f", "\\x00\\x07\\x0b\\x0c\\x0d\\x7f"),
        ("\x85\x9b", "\\x85\\x9b"),
        ("52 \u202ednufer", "52 \\u202ednufer"),
        ("line one\n\tline two", "line one\n\tline two"),
        ("plain words, 42 $ 3.50 é 🚀", "plain words, 42 $ 3.50 é 🚀"),
    ],
)
def test_mrkdwn_makes_hostile_text_literal(hostile: str, escaped: str) -> None:
    assert escape.mrkdwn(hostile) == escaped


def test_mrkdwn_leaves_no_control_sequence_in_a_mix() -> None:
    hostile = "<!channel> <@U123> <#C123> <https://evil|bank.com> *b* _i_ ~s~ ```c``` \x1b"
    out = escape.mrkdwn(hostile)
    assert "<" not in out
    assert ">" not in out
    assert "\x1b" not in out
    assert "*b*" not in out
    assert "```" not in out


def test_plain_only_makes_control_characters_inert() -> None:
    assert escape.plain("<!channel> *b* & _i_") == "<!channel> *b* & _i_"
    assert escape.plain("a\x1bb\x85\u202e") == "a\\x1bb\\x85\\u202e"


def test_code_keeps_ids_copyable() -> None:
    assert escape.code("order_4471") == "`order_4471`"
    assert escape.code("a*b_c~d") == "`a*b_c~d`"
    assert escape.code("<@U1> & `x`") == "`&lt;@U1&gt; &amp; \u02cbx\u02cb`"
    assert escape.code("") == "` `"


def test_preformatted_cannot_be_closed_early() -> None:
    ticks = "\u02cb" * 3
    assert escape.preformatted("a ```b``` <c>") == f"```a {ticks}b{ticks} &lt;c&gt;```"


def test_flat_joins_lines() -> None:
    assert flat(" a\n\nb\tc \x1c d ") == "a b c d"


def test_cut_leaves_short_text_alone() -> None:
    assert escape.cut("abcdef", 6) == "abcdef"


def test_cut_counts_the_note_in_the_limit() -> None:
    assert escape.cut("x" * 100, 30) == "x" * 7 + "… (93 more characters)"


def test_cut_note_counts_what_was_left_out() -> None:
    assert escape.cut("abcdefghijklmnopqrstuvwxyz", 24) == "ab… (24 more characters)"
    assert texts.more_characters(1) == "… (1 more character)"


def test_cut_below_the_note_size_ends_in_an_ellipsis() -> None:
    assert escape.cut("abcdef", 3) == "ab…"
    assert escape.cut("x" * 23, 22) == "x" * 21 + "…"
    assert escape.cut("abcdef", 0) == ""


def test_limit_never_splits_an_escape_and_counts_source_characters() -> None:
    assert escape.mrkdwn("<" * 100, limit=50) == "&lt;" * 6 + "… (94 more characters)"
    assert escape.mrkdwn("*" * 100, limit=40) == f"{WJ}*{WJ}" * 5 + "… (95 more characters)"


def test_code_limit_includes_the_backticks() -> None:
    out = escape.code("a" * 500, limit=60)
    assert len(out) <= 60
    assert out.startswith("`aaa")
    assert out.endswith("more characters)`")


def test_json_text_is_inert_and_parses_back() -> None:
    args = {"to": "a@example.com", "body": "hi\x1b[2J\x85\u202e", "n": 1}
    text = escape.json_text(args, limit=3000)
    assert text is not None
    assert "\x1b" not in text
    assert "\x85" not in text
    assert "\u202e" not in text
    assert text.startswith('{\n  "to"')
    assert json.loads(text) == args


def test_json_text_falls_back_to_compact_then_none() -> None:
    args = {f"k{i}": i for i in range(300)}
    compact = escape.json_text(args, limit=len(json.dumps(args, ensure_ascii=False)))
    assert compact is not None
    assert "\n" not in compact
    assert escape.json_text({"v": "x" * 5000}, limit=3000) is None


_UNJOINED = re.compile(rf"(?<!{WJ})[*_~`]|[*_~`](?!{WJ})")
_BARE_AMPERSAND = re.compile(r"&(?!amp;|lt;|gt;)")


@given(st.text(), st.integers(min_value=0, max_value=400))
def test_mrkdwn_is_always_inert_and_within_limit(text: str, limit: int) -> None:
    out = escape.mrkdwn(text, limit=limit)
    assert len(out) <= limit
    assert "<" not in out
    assert ">" not in out
    assert not _UNJOINED.search(out)
    assert not _BARE_AMPERSAND.search(out)
    assert not any(ord(c) < 32 and c not in "\n\t" for c in out)
    assert not any(0x7F <= ord(c) < 0xA0 for c in out)


@given(st.text(), st.integers(min_value=0, max_value=400))
def test_cut_is_within_limit_and_a_prefix(text: str, limit: int) -> None:
    out = escape.cut(text, limit)
    assert len(out) <= limit
    if len(text) <= limit:
        assert out == text
    else:
        kept = out.split("…", 1)[0]
        assert text.startswith(kept)


@given(st.text(), st.integers(min_value=3, max_value=400))
def test_code_is_one_closed_span(text: str, limit: int) -> None:
    out = escape.code(text, limit=limit)
    assert len(out) <= limit
    assert out.startswith("`")
    assert out.endswith("`")
    inner = out[1:-1]
    assert inner
    assert "`" not in inner
    assert "<" not in inner
    assert ">" not in inner
    assert "\n" not in inner
    assert not _BARE_AMPERSAND.search(inner)
