"""Out of office on the approvals page: "away until …, delegate to …", and "I'm back"
(`Runtime.set_away`, `Runtime.back`; the rules are `runtime.approvals.delegation`'s)."""

from __future__ import annotations

from aiohttp import web

from bot import words
from bot.approvers import html
from bot.approvers.routes import page
from bot.approvers.routes import see_other
from bot.approvers.routes import signed_in
from bot.approvers.session import check_csrf
from bot.requests import instant
from runtime import Actor
from runtime import errors


async def set_away(request: web.Request) -> web.StreamResponse:
    parts, session = signed_in(request)
    form = await request.post()
    check_csrf(session, html.posted(form, "csrf"))
    delegate = html.posted(form, "delegate") or ""
    if "@" in delegate:
        delegate = parts.people.person_of(delegate)
    try:
        until = instant(html.posted(form, "until") or "")
        me = Actor.of_person(session.person)
        await parts.rt.set_away(session.person, until=until, delegate=delegate, by=me)
    except (ValueError, errors.InvalidRequest) as exc:
        text = words.refusal(exc) if isinstance(exc, errors.InvalidRequest) else str(exc)
        return page(html.notice(text, refused=True), session=session, status=400)
    return see_other("/approvals")


async def back(request: web.Request) -> web.StreamResponse:
    parts, session = signed_in(request)
    check_csrf(session, html.posted(await request.post(), "csrf"))
    await parts.rt.back(session.person, by=Actor.of_person(session.person))
    return see_other("/approvals")


def add_routes(app: web.Application) -> None:
    app.router.add_post("/approvals/away", set_away)
    app.router.add_post("/approvals/back", back)
