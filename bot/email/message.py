"""An approval as an e-mail, from pure functions: plain text and HTML with the card's
content and one link per decision. Everything an agent or a requester wrote is escaped in
the HTML and kept to one line in headers (docs/architecture.md rule 8)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC
from datetime import datetime
from email.message import EmailMessage
from email.utils import make_msgid
from html import escape
from typing import Any

from bot import reading
from bot import words
from runtime.display import Display
from runtime.records import Approval

KINDS = {
    "request": "Approval needed",
    "reminder": "Reminder: approval needed",
    "escalation": "Escalated: approval needed",
}


@dataclass(frozen=True)
class Letter:
    """What one message says: the approval, to whom, and where each decision goes."""

    approval: Approval
    to: str
    links: Mapping[str, str]
    """Decision ("approved", "declined") -> the URL of its confirmation page."""
    kind: str = "request"
    display: Display | None = None
    task: str | None = None
    authority: Mapping[str, Any] | None = None
    on_behalf_of: str | None = None
    """The away person this one decides for, as their delegate."""


def one_line(text: str, limit: int = 150) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def title(letter: Letter) -> str:
    approval = letter.approval
    args = approval.shown_approved_args or approval.shown_args
    return reading.title(letter.display, args) or approval.tool


def lines(letter: Letter) -> list[tuple[str, str]]:
    """The card's content as (label, text) pairs, untrusted text as it is."""
    approval = letter.approval
    args = approval.shown_approved_args or approval.shown_args
    found = [(name, reading.value(letter.display, name, args)) for name in args]
    if letter.task:
        found.append(("Task", letter.task))
    if approval.agent_reason:
        found.append(("Agent's reason", approval.agent_reason))
    found.append(("Asked by", approval.requested_by or words.UNKNOWN_PERSON))
    if approval.deadline:
        found.append(("Decide by", _when(approval.deadline)))
    said = words.who_may_decide(letter.authority)
    if said:
        found.append(("", said))
    if letter.on_behalf_of:
        found.append(("You decide for", f"{letter.on_behalf_of} (away; you are their delegate)"))
    return found


def build(letter: Letter, *, sender: str) -> EmailMessage:
    message = EmailMessage()
    message["Subject"] = one_line(f"{KINDS[letter.kind]}: {title(letter)}")
    message["From"] = sender
    message["To"] = letter.to
    message["Message-ID"] = make_msgid(domain=sender.rpartition("@")[2].strip("> ") or None)
    message["Auto-Submitted"] = "auto-generated"
    message.set_content(text(letter))
    message.add_alternative(html(letter), subtype="html")
    return message


def text(letter: Letter) -> str:
    approval = letter.approval
    body = [f"{KINDS[letter.kind]}: {one_line(title(letter))}", ""]
    body += [f"{label}: {value}" if label else value for label, value in lines(letter)]
    body += [
        "",
        f"Approve: {letter.links['approved']}",
        f"Decline: {letter.links['declined']}",
        "",
        "Each link opens a page that asks you to confirm; nothing is decided until you do.",
        f"The links are yours alone, work once, and end with the approval ({approval.id}).",
    ]
    return "\n".join(body) + "\n"


def html(letter: Letter) -> str:
    approval = letter.approval
    rows = "".join(
        f"<tr><th align=left>{escape(label)}</th><td>{escape(value)}</td></tr>"
        if label
        else f"<tr><td colspan=2>{escape(value)}</td></tr>"
        for label, value in lines(letter)
    )
    approve, decline = (escape(letter.links[d], quote=True) for d in ("approved", "declined"))
    return (
        '<!doctype html><html><body style="font-family:sans-serif">'
        f"<h2>{escape(KINDS[letter.kind])}: {escape(one_line(title(letter)))}</h2>"
        f"<table cellpadding=4>{rows}</table>"
        f'<p><a href="{approve}" style="background:#007a5a;color:#fff;padding:8px 16px;'
        'text-decoration:none;border-radius:4px">Approve…</a> &nbsp; '
        f'<a href="{decline}" style="color:#a00">Decline…</a></p>'
        '<p style="color:#616061;font-size:13px">Each link opens a page that asks you to '
        "confirm; nothing is decided until you do. The links are yours alone, work once, and "
        f"end with the approval ({escape(approval.id)}).</p></body></html>"
    )


def _when(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
