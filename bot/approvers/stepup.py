"""The approvals page's passkey handlers (`bot.approvers.passkeys`): a person's passkeys and
registering one, and approving an approval whose policy requires step-up. The ceremonies'
JSON POSTs carry the session's CSRF token like every form."""

from __future__ import annotations

import json
import logging
from typing import Any

from aiohttp import web

from bot import words
from bot.approvers import html
from bot.approvers.context import APPROVERS
from bot.approvers.context import Approvers
from bot.approvers.passkey_js import SCRIPT
from bot.approvers.passkeys import PasskeyRefused
from bot.approvers.passkeys import Passkeys
from bot.approvers.session import Session
from bot.approvers.session import check_csrf
from bot.tasks import after_decision
from runtime import errors
from runtime.records import ApprovalState

log = logging.getLogger("signoff.approvers")
MAX_BODY = 64 * 1024


async def script(request: web.Request) -> web.Response:
    return web.Response(
        text=SCRIPT, content_type="text/javascript", headers={"Cache-Control": "no-store"}
    )


async def passkeys_body(parts: Approvers, session: Session) -> str:
    """The person's passkeys, and the button that registers one."""
    theirs = await parts.rt.passkeys(session.person)
    rows = "".join(
        f"<li>{html.esc(p.id[:16])}… · registered {html.esc(html.when(p.created_at))}</li>"
        for p in theirs
    )
    return (
        "<h2>Your passkeys</h2><p>Approvals whose policy asks for a second factor count only "
        "once you confirm them with one of these.</p>"
        + (f'<ul id="passkeys">{rows}</ul>' if rows else "<p>None yet.</p>")
        + '<button class="primary" id="register" data-passkey="/approvals/passkeys">'
        "Register a passkey</button>" + html.passkey_script()
    )


async def registration_options(request: web.Request) -> web.Response:
    _, session, keys, _ = await _ceremony(request)
    options = await keys.registration_options(session.person, session.email)
    return _ok(options=json.loads(options))


async def register(request: web.Request) -> web.Response:
    _, session, keys, body = await _ceremony(request)
    try:
        await keys.register(session.person, _credential(body))
    except PasskeyRefused as exc:
        return _refused(str(exc))
    log.info("%s registered a passkey", session.person)
    return _ok(message="Your passkey is registered.")


async def approval_options(request: web.Request) -> web.Response:
    parts, session, keys, _ = await _ceremony(request)
    approval_id = request.match_info["approval_id"]
    try:
        approval = await parts.rt.queries.approval(approval_id)
        await parts.rt.check_decider(approval, "approved", session.person)
        options = await keys.approval_options(session.person, approval_id)
    except (errors.DecisionRefused, errors.ApprovalNotFound) as exc:
        return _refused(words.refusal(exc))
    except PasskeyRefused as exc:
        return _refused(str(exc))
    return _ok(options=json.loads(options))


async def approve(request: web.Request) -> web.Response:
    """Approve with a passkey's fresh assertion: checked, then `decide(..., stepped_up=True)`."""
    parts, session, keys, body = await _ceremony(request)
    approval_id = request.match_info["approval_id"]
    try:
        await keys.confirm(session.person, approval_id, _credential(body))
        approval = await parts.rt.decide(
            approval_id, "approved", by=session.person, resume=False, stepped_up=True
        )
    except PasskeyRefused as exc:
        return _refused(str(exc))
    except (errors.DecisionRefused, errors.ApprovalNotFound, errors.InvalidRequest) as exc:
        return _refused(words.refusal(exc))
    after_decision(parts.background, parts.rt, approval)
    if approval.state != ApprovalState.PENDING:
        return _ok(message=html.outcome(approval))
    return _ok(message=html.counted(approval))


async def _ceremony(request: web.Request) -> tuple[Approvers, Session, Passkeys, dict[str, Any]]:
    parts = request.app[APPROVERS]
    session = parts.sessions.read(request)
    if session is None:
        raise web.HTTPForbidden(text="Sign in again: this page's session ended.")
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise web.HTTPRequestEntityTooLarge(max_size=MAX_BODY, actual_size=request.content_length)
    try:
        body = json.loads(await request.read() or b"{}")
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise web.HTTPBadRequest(text="Send a JSON object.")
    check_csrf(session, body.get("csrf") if isinstance(body.get("csrf"), str) else None)
    if parts.passkeys is None:
        raise web.HTTPServiceUnavailable(text="Passkeys need public_url (docs/approvers.md).")
    try:
        import webauthn  # noqa: F401
    except ImportError:
        raise web.HTTPServiceUnavailable(
            text="Passkeys need the passkeys extra: pip install 'signoff[passkeys]'."
        ) from None
    return parts, session, parts.passkeys, body


def _credential(body: dict[str, Any]) -> dict[str, Any]:
    found = body.get("credential")
    if not isinstance(found, dict):
        raise PasskeyRefused("No passkey answer was sent.")
    return found


def _ok(**said: Any) -> web.Response:
    return web.json_response(said, headers={"Cache-Control": "no-store"})


def _refused(message: str) -> web.Response:
    return web.json_response({"message": message}, status=400)


def add_routes(app: web.Application) -> None:
    app.router.add_get("/approvals/passkey.js", script)
    app.router.add_post("/approvals/passkeys/options", registration_options)
    app.router.add_post("/approvals/passkeys", register)
    app.router.add_post("/approvals/{approval_id}/passkey/options", approval_options)
    app.router.add_post("/approvals/{approval_id}/passkey", approve)
