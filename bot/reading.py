"""What people read, not what the code stores: a tool's arguments as its `Display` declares
them (money with its currency, a link for an id, a short title), the same on every surface.

Everything here returns plain, untrusted text (or a URL built from a developer's template
with each argument percent-encoded); each surface escapes it its own way.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from typing import Protocol
from urllib.parse import quote

from runtime.display import Display
from runtime.display import money_text
from runtime.records import SENSITIVE_MASK
from runtime.records import Approval
from runtime.spend import limit_line


class HasTools(Protocol):
    """What `displays` reads: a runtime's agents and their tools."""

    @property
    def agents(self) -> Mapping[str, Any]: ...


def displays(rt: HasTools) -> dict[str, Display]:
    """Each loaded tool's display, by tool name (the first agent naming a tool wins)."""
    found: dict[str, Display] = {}
    for agent in rt.agents.values():
        for name, tool in agent.tools.items():
            if tool.display is not None:
                found.setdefault(name, tool.display)
    return found


def show(value: Any) -> str:
    """An argument's value as it is: strings bare, anything else as JSON."""
    if isinstance(value, str) and value:
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def money(display: Display | None, name: str, args: Mapping[str, Any]) -> str | None:
    """`$25.00` for an amount the display declares as money, else None."""
    if display is None or name not in display.money:
        return None
    amount = args.get(name)
    if isinstance(amount, bool) or not isinstance(amount, int):
        return None
    code = display.money[name]
    currency = code if code.isupper() and len(code) == 3 else args.get(code)
    if not isinstance(currency, str) or not currency.isalpha() or len(currency) != 3:
        return None
    return money_text(amount, currency)


def value(display: Display | None, name: str, args: Mapping[str, Any]) -> str:
    """An argument as a person reads it: money with its currency, else the value."""
    return money(display, name, args) or show(args.get(name))


def link(display: Display | None, name: str, args: Mapping[str, Any]) -> str | None:
    """The URL the display declares for an argument, its values percent-encoded; None when
    there is none or an argument it needs is missing or masked."""
    if display is None or name not in display.links:
        return None
    template = display.links[name]
    if not template.startswith(("https://", "http://")):
        return None
    try:
        url = template.format_map(_Encoded(args))
    except (KeyError, ValueError):
        return None
    return url if "|" not in url and ">" not in url and " " not in url else None


def title(display: Display | None, args: Mapping[str, Any]) -> str | None:
    """The display's title over these arguments, each placeholder as it reads
    ("Refund $25.00 on order 4471"); None without one or when an argument is missing."""
    if display is None or not display.title:
        return None
    try:
        return display.title.format_map(_Read(display, args))
    except (KeyError, ValueError):
        return None


def moneys(display: Display | None) -> frozenset[str]:
    return frozenset(display.money) if display else frozenset()


class _Read(dict[str, str]):
    def __init__(self, display: Display, args: Mapping[str, Any]) -> None:
        super().__init__()
        self.display, self.args = display, args

    def __missing__(self, key: str) -> str:
        if key not in self.args:
            raise KeyError(key)
        return value(self.display, key, self.args)


class _Encoded(dict[str, str]):
    def __init__(self, args: Mapping[str, Any]) -> None:
        super().__init__()
        self.args = args

    def __missing__(self, key: str) -> str:
        found = self.args.get(key)
        if found is None or found == SENSITIVE_MASK or isinstance(found, dict | list):
            raise KeyError(key)
        return quote(show(found), safe="")


def context_lines(approval: Approval) -> list[str]:
    """Why it is asked again, the facts its tool read (masked as everywhere) or why they
    could not be read, and the agent's stated reason: plain text, as the console shows
    them beside the call (the card and Home say the same in Slack's words)."""
    shown = approval.shown()
    lines = []
    if approval.reasked:
        lines.append(f"asked again: {approval.reasked.get('text', '')}")
    if shown.context is not None:
        facts = ", ".join(f"{k.replace('_', ' ')}: {show(v)}" for k, v in shown.context.items())
        lines.append(f"context: {facts or 'none'}")
    elif approval.context_error:
        lines.append(f"context unavailable: {approval.context_error}")
    if approval.agent_reason:
        lines.append(f"the agent's reason: {approval.agent_reason}")
    return lines


def cool_off_lines(approval: Approval) -> list[str]:
    """Where an approved call is in its cool-off or undo window (issue 42.6), as plain text
    with UTC times: the console shows them beside the call (the card says the same)."""

    def at(moment: datetime | None) -> str:
        return f"{moment:%Y-%m-%d %H:%M:%S} UTC" if moment else "?"

    if approval.cool_off == "waiting":
        return [f"cool-off: runs at {at(approval.cool_off_until)} unless an approver cancels it"]
    if approval.cool_off == "cancelled":
        return [f"cool-off: cancelled by {approval.cool_off_by} before it ran; nothing was done"]
    if approval.cool_off != "ran":
        return []
    if approval.undone_by is not None:
        return [f"undone by {approval.undone_by} at {at(approval.undone_at)}"]
    if approval.undoing_by is not None:
        return [f"being undone by {approval.undoing_by}"]
    lines = [f"undo failed: {approval.undo_error}; not undone"] if approval.undo_error else []
    if approval.ran_outcome is None and approval.undo_seconds:
        lines.append("running: Undo is offered once it has completed")
    elif approval.ran_outcome in ("failed", "in_doubt"):
        lines.append(f"it {_ENDED[approval.ran_outcome]}: nothing to undo")
    elif approval.undo_until is not None:
        lines.append(f"may be undone until {at(approval.undo_until)}")
    return lines


_ENDED = {"failed": "failed", "in_doubt": "is in doubt (on-call was paged)"}


def limit_lines(approval: Approval) -> list[str]:
    """Each limit a call counted against, as it stood when it was asked: "$420 of $500 for
    this customer in 30 days, after this refund" (plain text; it holds nothing an agent or
    a requester wrote)."""
    match = approval.rule
    return [limit_line(state, approval.tool) for state in (match.limits if match else ())]
