"""The approvals page's HTML, from pure functions: no I/O, every value an agent, a requester
or a person wrote escaped by `esc` (docs/architecture.md rule 8). Plain HTML and a little
CSS: no script is needed to decide (the passkey step alone uses one)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from datetime import UTC
from datetime import datetime
from html import escape
from typing import Any

from bot import reading
from bot import words
from runtime.display import Display
from runtime.records import Approval
from runtime.records import ApprovalState
from runtime.records import Effect
from runtime.records import Page

STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:0;background:#f6f6f4;color:#1d1c1d}
header{background:#3f0e40;color:#fff;padding:10px 24px;display:flex;gap:16px;align-items:center}
header a{color:#fff}header button{color:#fff;background:transparent;border-color:#fff}
main{max-width:960px;margin:0 auto;padding:16px 24px}
.card{background:#fff;border:1px solid #ddd;border-radius:8px;padding:14px 18px;margin:12px 0}
.card h3{margin:0 0 6px}.muted{color:#616061;font-size:13px}
.notice{background:#fff8e1;border:1px solid #e8c96b;padding:10px 14px;border-radius:6px}
.refused{background:#fde8e8;border-color:#e08a8a}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:8px 0}
dt{color:#616061}dd{margin:0;overflow-wrap:anywhere}
form.inline{display:inline-block;margin:6px 8px 0 0}
button{font:inherit;padding:5px 14px;border-radius:5px;border:1px solid #999;background:#fff}
button.primary{background:#007a5a;color:#fff;border-color:#007a5a}
button.danger{color:#a00}
textarea,input[type=text]{font:inherit;width:100%;box-sizing:border-box}
"""


def esc(value: Any) -> str:
    """Untrusted text as HTML text (and attribute values)."""
    return escape(value if isinstance(value, str) else reading.show(value), quote=True)


def when(at: datetime | None) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if at else ""


def document(title: str, body: str, *, person: str | None = None, csrf: str = "") -> str:
    who = ""
    if person is not None:
        who = (
            f'<span id="person">{esc(person)}</span>'
            f'<form class="inline" method="post" action="/approvals/logout">'
            f'<input type="hidden" name="csrf" value="{esc(csrf)}">'
            f'<button id="sign-out">Sign out</button></form>'
        )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width,initial-scale=1">'
        f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>"
        f'<header><a href="/approvals"><b>Signoff approvals</b></a>{who}</header>'
        f"<main>{body}</main></body></html>"
    )


def notice(text: str | None, *, refused: bool = False) -> str:
    if not text:
        return ""
    kind = "notice refused" if refused else "notice"
    return f'<p class="{kind}" id="notice">{esc(text)}</p>'


def hidden(name: str, value: str) -> str:
    return f'<input type="hidden" name="{esc(name)}" value="{esc(value)}">'


def posted(form: Any, name: str) -> str | None:
    """A text field of a posted form, or None (absent, or a file)."""
    value = form.get(name)
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class Card:
    """One approval as the page shows it, with what is read beside it."""

    approval: Approval
    display: Display | None = None
    votes: Sequence[str] = ()
    authority: Mapping[str, Any] | None = None
    task: str | None = None
    history: Sequence[Effect] = ()
    actions: Sequence[str] = field(default_factory=tuple)
    """The decisions the reader may make here: "approved", "declined", "edit"."""


def title(approval: Approval, display: Display | None) -> str:
    args = approval.shown_approved_args or approval.shown_args
    return reading.title(display, args) or approval.tool


def card(view: Card, csrf: str, *, full: bool = False) -> str:
    approval = view.approval
    state = words.approval_state(approval)
    head = (
        f'<h3><a href="/approvals/{esc(approval.id)}">{esc(title(approval, view.display))}</a></h3>'
    )
    parts = [
        f'<section class="card" data-approval="{esc(approval.id)}" data-state="{esc(state)}">',
        head,
        f'<div class="muted">{esc(approval.tool)} · policy {esc(approval.policy)} · '
        f"asked by {esc(approval.requested_by or words.UNKNOWN_PERSON)} · "
        f"{esc(when(approval.created_at))}</div>",
        _fields(approval, view.display),
        _context(approval, view.task),
        _who(view),
    ]
    if full:
        parts.append(_history(view.history))
    if approval.state == ApprovalState.PENDING:
        parts.append(decision_forms(approval, view.actions, csrf))
    else:
        parts.append(f'<p class="outcome">{esc(outcome(approval))}</p>')
    parts.append("</section>")
    return "".join(parts)


def counted(approval: Approval) -> str:
    """A vote recorded short of its quorum."""
    return f"Your approval is counted; it waits for {approval.required_approvals} in all."


def outcome(approval: Approval) -> str:
    state = words.approval_state(approval)
    by = f" by {approval.decided_by}" if approval.decided_by else ""
    by += f" for {approval.decided_for}" if approval.decided_for else ""
    reason = f": {approval.reason}" if approval.reason and state == "declined" else ""
    if state == words.ASKED:
        reason = f": {approval.question}"
    return f"{state.capitalize()}{by} {when(approval.decided_at)}{reason}"


def _fields(approval: Approval, display: Display | None) -> str:
    args = approval.shown_approved_args or approval.shown_args
    rows = "".join(
        f"<dt>{esc(name)}</dt><dd>{esc(reading.value(display, name, args))}</dd>" for name in args
    )
    return f'<dl class="args">{rows}</dl>'


def _context(approval: Approval, task: str | None) -> str:
    lines = []
    if task:
        lines.append(("Task", task))
    asked = words.question(approval.reasked)
    if asked is not None:
        lines.append((words.question_from(asked[0]), asked[1]))
    elif approval.reasked:
        lines.append(("Asked again", str(approval.reasked.get("text", ""))))
    facts = approval.shown().context
    if facts:
        said = ", ".join(f"{k.replace('_', ' ')}: {reading.show(v)}" for k, v in facts.items())
        lines.append(("Context", said))
    elif approval.context_error:
        lines.append(("Context unavailable", approval.context_error))
    if approval.agent_reason:
        label = words.ANSWER if asked is not None else "Agent's reason"
        lines.append((label, approval.agent_reason))
    lines += [("Limit", line) for line in reading.limit_lines(approval)]
    rows = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in lines)
    return f'<dl class="context">{rows}</dl>' if rows else ""


def _who(view: Card) -> str:
    said = words.who_may_decide(view.authority)
    votes = ""
    if view.approval.required_approvals > 1:
        voters = ", ".join(view.votes) or "nobody yet"
        votes = f" · {len(view.votes)} of {view.approval.required_approvals} approved: {voters}"
    if not said and not votes:
        return ""
    return f'<p class="who muted">{esc(said or "")}{esc(votes)}</p>'


def _history(effects: Sequence[Effect]) -> str:
    if not effects:
        return '<p class="muted">Nothing done in this run yet.</p>'
    rows = "".join(
        f"<li>{esc(e.tool)} · {esc(words.EFFECT_STATES.get(e.status.value, e.status.value))}"
        f" · {esc(when(e.started_at))}</li>"
        for e in effects
    )
    return f'<h4>What this run did before</h4><ol class="history">{rows}</ol>'


def decision_forms(approval: Approval, actions: Iterable[str], csrf: str) -> str:
    allowed = set(actions)
    if not allowed:
        return '<p class="muted">You may not decide this one.</p>'
    url = f"/approvals/{esc(approval.id)}/decide"
    token = hidden("csrf", csrf)
    forms = []
    if "passkey" in allowed:  # the policy requires step-up: approve with a passkey
        forms.append(
            f'<button class="primary" name="approve" data-passkey="{url[: -len("/decide")]}'
            f'/passkey">Approve with your passkey</button> '
            '<a class="muted" href="/approvals/passkeys">your passkeys</a>' + passkey_script()
        )
    if "approved" in allowed:
        forms.append(
            f'<form class="inline" method="post" action="{url}">{token}'
            f"{hidden('decision', 'approved')}"
            f'<button class="primary" name="approve">Approve</button></form>'
        )
    if "declined" in allowed:
        forms.append(
            f'<form class="inline decline" method="post" action="{url}">{token}'
            f"{hidden('decision', 'declined')}"
            '<input type="text" name="reason" placeholder="Why not? (optional)">'
            '<button class="danger" name="decline">Decline</button></form>'
        )
    if words.ASKED in allowed:
        forms.append(
            f'<form class="inline ask" method="post" action="{url}">{token}'
            f"{hidden('decision', words.ASKED)}"
            '<input type="text" name="reason" placeholder="Your question for the agent">'
            f'<button name="ask">{esc(words.ASK)}</button></form>'
        )
    if "edit" in allowed:
        args = json.dumps(approval.shown_args, indent=2, ensure_ascii=False)
        forms.append(
            f"<details><summary>Edit the arguments, then approve</summary>"
            f'<form method="post" action="{url}">{token}{hidden("decision", "approved")}'
            f'<textarea name="args" rows="6">{esc(args)}</textarea>'
            f'<button name="edit">Approve as edited</button></form></details>'
        )
    return f'<div class="decide">{"".join(forms)}</div>'


def passkey_script() -> str:
    """Where the passkey ceremony says how it went, and its script."""
    return '<p id="passkey-said" role="status"></p><script src="/approvals/passkey.js"></script>'


def page_item(page: Page) -> str:
    about = page.tool or words.AN_EFFECT
    return (
        f'<li data-page="{esc(page.id)}">{esc(about)} · {esc(page.reason)} · '
        f"opened {esc(when(page.created_at))}</li>"
    )


def decided_item(approval: Approval, display: Display | None) -> str:
    return (
        f'<li data-approval="{esc(approval.id)}">'
        f'<a href="/approvals/{esc(approval.id)}">{esc(title(approval, display))}</a> · '
        f"{esc(outcome(approval))}</li>"
    )


def listing(
    pending: Sequence[str], pages: Sequence[Page], decided: Sequence[str], *, more: int = 0
) -> str:
    waiting = "".join(pending) or f'<p class="muted">{esc(words.NOTHING_PENDING)}</p>'
    extra = f'<p class="muted">{esc(words.and_more(more))}</p>' if more else ""
    open_pages = "".join(page_item(p) for p in pages)
    recent = "".join(decided)
    return (
        f'<h2>{esc(words.HOME_PENDING)}</h2><div id="pending">{waiting}{extra}</div>'
        + (f'<h2>{esc(words.HOME_PAGES)}</h2><ul id="pages">{open_pages}</ul>' if pages else "")
        + f"<h2>{esc(words.HOME_RECENT)}</h2>"
        + (f'<ul id="recent">{recent}</ul>' if recent else f"<p>{esc(words.NO_RECENT)}</p>")
    )


def sign_in(problem: str | None = None) -> str:
    return (
        notice(problem, refused=True)
        + "<h2>Sign in</h2><p>Sign in with your organisation's account to see what waits "
        'for your decision.</p><p><a id="sign-in" href="/approvals/login">Sign in</a></p>'
    )


def not_configured() -> str:
    return (
        "<h2>Sign-in is not configured</h2><p>This server has no OpenID Connect provider: set "
        "<code>oidc_issuer</code> and <code>oidc_client_id</code> (docs/approvers.md).</p>"
    )
