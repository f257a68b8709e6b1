"""The approvals page's handlers: sign-in through the OpenID Connect provider, a person's
list, one approval, and a decision. Each decision is `Runtime.decide` under the signed-in
person's id, answered once durable; the run resumes in the background, as from Slack."""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from typing import Any

from aiohttp import web

from bot import words
from bot.approvers import access
from bot.approvers import away_view
from bot.approvers import batch
from bot.approvers import html
from bot.approvers import stepup
from bot.approvers.context import APPROVERS
from bot.approvers.context import Approvers
from bot.approvers.oidc import SignInFailed
from bot.approvers.session import Session
from bot.approvers.session import check_csrf
from bot.tasks import after_decision
from runtime import errors
from runtime.approvals import Decision
from runtime.records import Approval
from runtime.records import ApprovalState

log = logging.getLogger("signoff.approvers")
RECENT = timedelta(days=14)
LISTED = 50
DECISIONS: dict[str, Decision] = {
    "approved": "approved",
    "declined": "declined",
    "asked": "asked",
}


def page(body: str, *, session: Session | None = None, status: int = 200) -> web.Response:
    text = html.document(
        "Signoff approvals",
        body,
        person=session.person if session else None,
        csrf=session.csrf if session else "",
    )
    return web.Response(text=text, status=status, content_type="text/html", headers=HEADERS)


def see_other(location: str) -> web.Response:
    """A 303 to `location`, returned (aiohttp deprecates returning an HTTPException)."""
    return web.Response(status=303, headers={"Location": location, "Cache-Control": "no-store"})


HEADERS = {
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Content-Security-Policy": "default-src 'self'; style-src 'unsafe-inline'; "
    "script-src 'self'; frame-ancestors 'none'; form-action 'self'",
}


def signed_in(request: web.Request) -> tuple[Approvers, Session]:
    """The page's parts and the person's session, else off to sign in."""
    parts = request.app[APPROVERS]
    session = parts.sessions.read(request)
    if session is None:
        raise web.HTTPSeeOther("/approvals/login" if parts.provider else "/approvals/signin")
    return parts, session


async def index(request: web.Request) -> web.Response:
    parts, session = signed_in(request)
    body = await listing(parts, session) + await away_view.section(parts, session)
    return page(body, session=session)


async def listing(parts: Approvers, session: Session, note: str | None = None) -> str:
    rt, person = parts.rt, session.person
    pending = await access.pending_for(rt, person)
    cards = [html.card(await card_of(parts, a, person), session.csrf) for a in pending[:LISTED]]
    pages = await rt.queries.open_pages_for(person, limit=LISTED)
    theirs = await rt.queries.approvals_of_person(person, since=rt.clock() - RECENT, limit=LISTED)
    decided = [
        html.decided_item(a, parts.displays.get(a.tool))
        for a in theirs
        if a.decided_by == person and a.state != ApprovalState.PENDING
    ]
    more = max(0, len(pending) - LISTED)
    several = batch.forms(pending, parts.displays, session.csrf)
    return html.notice(note) + several + html.listing(cards, pages, decided, more=more)


async def card_of(
    parts: Approvers, approval: Approval, person: str, *, full: bool = False
) -> html.Card:
    rt = parts.rt
    run = await rt.find_run(approval.run_id)
    history = await rt.queries.effects(run.id) if full and run is not None else []
    return html.Card(
        approval=approval,
        display=parts.displays.get(approval.tool),
        votes=await rt.queries.votes(approval.id) if approval.required_approvals > 1 else (),
        authority=rt.authority(approval),
        task=run.task if run is not None else None,
        history=[e for e in history if e.call_id != approval.call_id],
        actions=await access.actions(rt, approval, person),
    )


async def show(request: web.Request) -> web.Response:
    parts, session = signed_in(request)
    approval = await _approval(parts, request.match_info["approval_id"])
    if approval is None:
        return page(html.notice("There is no such approval.", refused=True), session=session)
    view = await card_of(parts, approval, session.person, full=True)
    return page(html.card(view, session.csrf, full=True), session=session)


async def decide(request: web.Request) -> web.Response:
    parts, session = signed_in(request)
    form = await request.post()
    check_csrf(session, html.posted(form, "csrf"))
    approval_id = request.match_info["approval_id"]
    note, refused = await _decide(parts, approval_id, session.person, form)
    approval = await _approval(parts, approval_id)
    body = html.notice(note, refused=refused)
    if approval is not None:
        view = await card_of(parts, approval, session.person, full=True)
        body += html.card(view, session.csrf, full=True)
    return page(body, session=session, status=400 if refused else 200)


async def decide_batch(request: web.Request) -> web.Response:
    """Several approvals of one tool decided together (`bot.approvers.batch`)."""
    parts, session = signed_in(request)
    form = await request.post()
    check_csrf(session, html.posted(form, "csrf"))
    note, refused = await batch.decide(parts, session.person, form)
    body = html.notice(note, refused=refused) + await listing(parts, session)
    return page(body, session=session, status=400 if refused else 200)


async def _decide(parts: Approvers, approval_id: str, person: str, form: Any) -> tuple[str, bool]:
    """Decide as `person`; what to say, and whether it was refused (nothing changed)."""
    decision = DECISIONS.get(html.posted(form, "decision") or "")
    if decision is None:
        return "Choose Approve, Decline or Ask.", True
    try:
        args = _args(html.posted(form, "args"))
        approval = await parts.rt.decide(
            approval_id,
            decision,
            by=person,
            reason=html.posted(form, "reason") or None,
            args=args,
            resume=False,
        )
    except (errors.DecisionRefused, errors.ApprovalNotFound, errors.InvalidRequest) as exc:
        return words.refusal(exc), True
    except ValueError as exc:
        return str(exc), True
    after_decision(parts.background, parts.rt, approval)
    if approval.state != ApprovalState.PENDING:
        return html.outcome(approval), False
    return html.counted(approval), False


def _args(raw: str | None) -> dict[str, Any] | None:
    if raw is None or not raw.strip():
        return None
    try:
        args = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"The edited arguments are not JSON: {exc}") from None
    if not isinstance(args, dict):
        raise ValueError("The edited arguments must be a JSON object.")
    return args


async def _approval(parts: Approvers, approval_id: str) -> Approval | None:
    try:
        return await parts.rt.queries.approval(approval_id)
    except errors.ApprovalNotFound:
        return None


# signing in


async def signin(request: web.Request) -> web.Response:
    parts = request.app[APPROVERS]
    if parts.provider is None:
        return page(html.not_configured(), status=503)
    return page(html.sign_in())


async def login(request: web.Request) -> web.StreamResponse:
    parts = request.app[APPROVERS]
    if parts.provider is None:
        return page(html.not_configured(), status=503)
    try:
        url, flow = await parts.provider.start()
    except SignInFailed as exc:
        log.warning("sign-in could not start: %s", exc)
        return page(html.sign_in(f"The sign-in provider could not be reached: {exc}"), status=502)
    response = see_other(url)
    parts.sessions.remember_login(response, flow)
    return response


async def callback(request: web.Request) -> web.StreamResponse:
    parts = request.app[APPROVERS]
    flow = parts.sessions.login(request)
    if parts.provider is None:
        return page(html.not_configured(), status=503)
    if flow is None or request.query.get("state") != flow.get("state"):
        return page(
            html.sign_in("That sign-in was not started here, or took too long."), status=400
        )
    if "error" in request.query:
        return page(html.sign_in(f"The provider said: {request.query['error']}"), status=400)
    try:
        email = await parts.provider.finish(parts.callback_url(request), flow)
    except SignInFailed as exc:
        log.warning("sign-in failed: %s", exc)
        return page(html.sign_in(f"Sign-in failed: {exc}"), status=400)
    person = parts.people.person_of(email)
    log.info("%s signed in to the approvals page as %s", email, person)
    response = see_other("/approvals")
    parts.sessions.start(response, person, email)
    response.del_cookie("signoff_login", path="/")
    return response


async def logout(request: web.Request) -> web.StreamResponse:
    parts, session = signed_in(request)
    check_csrf(session, html.posted(await request.post(), "csrf"))
    response = see_other("/approvals/signin")
    parts.sessions.end(response)
    return response


async def passkeys_page(request: web.Request) -> web.Response:
    parts, session = signed_in(request)
    return page(await stepup.passkeys_body(parts, session), session=session)


def add_routes(app: web.Application) -> None:
    app.router.add_get("/approvals/passkeys", passkeys_page)
    stepup.add_routes(app)  # before /approvals/{approval_id}
    app.router.add_get("/approvals", index)
    app.router.add_get("/approvals/signin", signin)
    app.router.add_get("/approvals/login", login)
    app.router.add_get("/approvals/callback", callback)
    app.router.add_post("/approvals/logout", logout)
    app.router.add_post(batch.URL, decide_batch)
    app.router.add_get("/approvals/{approval_id}", show)
    app.router.add_post("/approvals/{approval_id}/decide", decide)


__all__ = ["add_routes"]
