"""Out of office on the approvals page: "away until …, delegate to …", and "I'm back"
(`Runtime.set_away`, `Runtime.back`; the rules are `runtime.approvals.delegation`'s)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from bot import words
from bot.approvers import html
from bot.approvers.context import Approvers
from bot.approvers.routes import page, signed_in
from bot.approvers.session import Session, check_csrf
from runtime import errors


async def section(parts: Approvers, session: Session) -> str:
    """The person's absence, and the form that sets or ends it."""
    mine = [a for a in await parts.rt.away() if a.person == session.person]
    token = html.hidden("csrf", session.csrf)
    if mine:
        away = mine[0]
        return (
            f'<h2>Away</h2><p id="away">You are away until {html.esc(html.when(away.until))}; '
            f"{html.esc(away.delegate)} decides for you.</p>"
            f'<form method="post" action="/approvals/back">{token}'
            '<button id="back">I\'m back</button></form>'
        )
    return (
        "<h2>Away</h2><p>While you are away, your delegate decides for you what names you "
        "(never what a group decides).</p>"
        f'<form method="post" action="/approvals/away">{token}'
        '<label>Away until (UTC) <input type="datetime-local" name="until" required></label> '
        '<label>Delegate to <input type="text" name="delegate" required '
        'placeholder="a Slack user id or an e-mail address"></label> '
        '<button id="set-away">Set</button></form>'
    )


async def set_away(request: web.Request) -> web.StreamResponse:
    parts, session = signed_in(request)
    form = await request.post()
    check_csrf(session, _field(form, "csrf"))
    delegate = _field(form, "delegate") or ""
    if "@" in delegate:
        delegate = parts.people.person_of(delegate)
    try:
        until = _until(_field(form, "until") or "")
        await parts.rt.set_away(session.person, until=until, delegate=delegate)
    except (ValueError, errors.InvalidRequest) as exc:
        text = words.refusal(exc) if isinstance(exc, errors.InvalidRequest) else str(exc)
        return page(html.notice(text, refused=True), session=session, status=400)
    return web.HTTPSeeOther("/approvals")


async def back(request: web.Request) -> web.StreamResponse:
    parts, session = signed_in(request)
    check_csrf(session, _field(await request.post(), "csrf"))
    await parts.rt.back(session.person)
    return web.HTTPSeeOther("/approvals")


def _until(text: str) -> datetime:
    try:
        found = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a date and time") from None
    return found if found.tzinfo else found.replace(tzinfo=UTC)


def _field(form: Any, name: str) -> str | None:
    value = form.get(name)
    return value if isinstance(value, str) else None


def add_routes(app: web.Application) -> None:
    app.router.add_post("/approvals/away", set_away)
    app.router.add_post("/approvals/back", back)
