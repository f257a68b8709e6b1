"""How a call and its arguments read in Slack: the one-line action (`shown_action`,
`action_summary`: the tool's display title, else the tool and its most telling arguments)
and one field per argument (`arg_fields`, as the tool's display reads it), for the approval
card, its thread, pages, Home and the replies to `/runs`.

Everything an agent or a requester wrote goes through `bot.slack.escape`, cut to the limits
below whatever the input.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from bot import reading
from bot.inert import flat
from bot.slack import escape
from bot.slack import texts
from runtime.display import Display
from runtime.records import Approval

ACTION_TEXT = 150
"""The one-line action: header-sized."""
SUMMARY_VALUE = 40
ARG_NAME = 100
ARG_VALUE = 500

_AMOUNT = re.compile(r"amount|cents|price|total|cost|quantity|qty", re.IGNORECASE)
_SUBJECT = re.compile(
    r"(?:^|_)(?:id|to)$|order|account|customer|recipient|email|invoice|user", re.IGNORECASE
)
_MISSING = object()
_UNEDITED = object()


show = reading.show
"""An argument's value as it is: strings bare, anything else as JSON."""


def shown_action(approval: Approval, display: Display | None = None) -> str:
    """The approval's `action_summary`, as inline code (safe in mrkdwn)."""
    return escape.code(action_summary(approval.tool, approval.shown_args, display))


def action_summary(tool: str, args: Mapping[str, Any], display: Display | None = None) -> str:
    """Plain, untrusted text: what the call does in a few words, at most 150 chars: the
    tool's display title ("Refund $25.00 on order 4471"), else the tool and its most telling
    arguments ("issue_refund 2500 cents on 4471")."""
    titled = reading.title(display, args)
    if titled:
        return escape.cut(flat(titled), ACTION_TEXT)
    amount = _first(args, _AMOUNT, numeric=True)
    subject = _first(args, _SUBJECT, skip=amount)
    pairs = []
    if amount is None and subject is None:
        pairs = [f"{k}={_short(v)}" for k, v in list(_scalars(args))[:2]]
    shown_amount = None
    if amount is not None:
        shown_amount = reading.money(display, amount, args) or _short(args[amount])
        if amount not in reading.moneys(display) and "cents" in amount.lower():
            shown_amount = texts.in_cents(shown_amount)  # 2500 is not $2,500: say the unit
    words = texts.action(
        tool,
        shown_amount,
        _short(args[subject]) if subject is not None else None,
        pairs,
    )
    return escape.cut(flat(words), ACTION_TEXT)


def _scalars(args: Mapping[str, Any]) -> list[tuple[str, Any]]:
    return [(k, v) for k, v in args.items() if isinstance(v, str | int | float)]


def _first(
    args: Mapping[str, Any], pattern: re.Pattern[str], *, numeric: bool = False, skip: Any = None
) -> str | None:
    for key, value in _scalars(args):
        if key == skip or isinstance(value, bool) or not pattern.search(key):
            continue
        if not numeric or not isinstance(value, str) or value.replace(".", "", 1).isdigit():
            return key
    return None


def _short(value: Any) -> str:
    return escape.cut(flat(show(value)), SUMMARY_VALUE)


def arg_fields(
    args: Mapping[str, Any],
    approved_args: Mapping[str, Any] | None,
    *,
    slots: int,
    display: Display | None = None,
) -> list[str]:
    """One mrkdwn field per argument, as the tool's display reads it (money, links); past
    `slots`, the rest summarised in the last one."""
    names = list(dict.fromkeys([*args, *(approved_args or {})]))
    shown, rest = (names, []) if len(names) <= slots else (names[: slots - 1], names[slots - 1 :])
    out = [_arg_field(n, args, approved_args, display) for n in shown]
    if rest:
        names_text = escape.mrkdwn(", ".join(rest), limit=ARG_VALUE)
        out.append(texts.more_args(len(rest), names_text))
    return out


def _arg_field(
    name: str,
    args: Mapping[str, Any],
    approved_args: Mapping[str, Any] | None,
    display: Display | None,
) -> str:
    label = escape.mrkdwn(flat(name), limit=ARG_NAME) or " "
    before = args.get(name, _MISSING)
    after = _UNEDITED if approved_args is None else approved_args.get(name, _MISSING)
    if after is _UNEDITED or after == before:
        return texts.field(label, _read(display, name, args, ARG_VALUE))
    half = ARG_VALUE // 2
    edited = texts.edited(
        _read(display, name, args, half), _read(display, name, approved_args or {}, half)
    )
    return texts.field(label, edited)


def _read(display: Display | None, name: str, args: Mapping[str, Any], limit: int) -> str:
    """mrkdwn: an argument as the display reads it; a declared link is the developer's URL
    with the value percent-encoded, labelled with the value itself (nothing hidden)."""
    if name not in args:
        return texts.NOT_SET
    text = escape.mrkdwn(reading.value(display, name, args), limit=limit)
    url = reading.link(display, name, args)
    return f"<{url}|{text}>" if url and text else text


def value_text(value: Any, limit: int) -> str:
    """mrkdwn: a value as it is (strings bare, else JSON), cut to `limit`."""
    if value is _MISSING:
        return texts.NOT_SET
    return escape.mrkdwn(show(value), limit=limit)
