"""The page an e-mailed decision link opens: `GET /approvals/mail/<token>` shows the approval
and asks the person to confirm; only the button's POST decides. A mail scanner that follows
the link (a GET) decides nothing.

A link that cannot be taken shows a page saying which, and changes nothing: *foreign* (not
signed here, altered, or for another approval: 403), *used* (its nonce is in the database:
409), *expired* (the approval's deadline passed, or it was decided already: 410). A
confirmed link is spent (its nonce written) in the same transaction as the decision it
carries: a double POST decides once, and a decision refused (or never committed) leaves
the link as it was.
"""

from __future__ import annotations

import logging

from aiohttp import web

from bot import words
from bot.approvers import html
from bot.approvers.context import APPROVERS
from bot.approvers.context import Approvers
from bot.approvers.routes import page
from bot.decision_links import Link
from bot.tasks import after_decision
from runtime import errors
from runtime.records import Approval
from runtime.records import ApprovalState

log = logging.getLogger("signoff.approvers")
PATH = "/approvals/mail/{token}"
LABELS = {"approved": "Approve", "declined": "Decline"}


def refused(kind: str, text: str, status: int) -> web.Response:
    body = f'<h2 id="link-{kind}">This link is {kind}</h2>' + html.notice(text, refused=True)
    return page(
        body + '<p>Nothing changed.</p><p><a href="/approvals">Your approvals</a></p>',
        status=status,
    )


async def check(request: web.Request) -> tuple[Approvers, Link, Approval] | web.Response:
    """The approvers' parts, the link the path names and its approval, or the page saying why
    the link cannot be taken."""
    parts = request.app[APPROVERS]
    token = request.match_info["token"]
    link = parts.links.read(token) if parts.links is not None else None
    if link is None:
        return refused("foreign", "It was not issued by this server, or was altered.", 403)
    try:
        approval = await parts.rt.queries.approval(link.approval_id)
    except errors.ApprovalNotFound:
        return refused("foreign", "It names no approval this server knows.", 403)
    used = await parts.rt.deliveries.email_link_used(link.nonce)
    if used is not None:
        return refused("used", f"It was used on {html.when(used)}; each link works once.", 409)
    if approval.state != ApprovalState.PENDING:
        said = "It expired" if words.approval_state(approval) == words.EXPIRED else "It ended"
        return refused("expired", f"{said} with the approval: {html.outcome(approval)}.", 410)
    deadline = approval.deadline
    if deadline is not None and deadline <= parts.rt.clock():
        return refused("expired", f"The approval's deadline passed ({html.when(deadline)}).", 410)
    return parts, link, approval


async def show(request: web.Request) -> web.Response:
    found = await check(request)
    if isinstance(found, web.Response):
        return found
    return page(confirmation(*found))


def confirmation(parts: Approvers, link: Link, approval: Approval) -> str:
    label = LABELS[link.decision]
    display = parts.displays.get(approval.tool)
    args = approval.shown_approved_args or approval.shown_args
    fields = "".join(f"<dt>{html.esc(k)}</dt><dd>{html.esc(v)}</dd>" for k, v in args.items())
    reason = (
        '<input type="text" name="reason" placeholder="Why not? (optional)">'
        if link.decision == "declined"
        else ""
    )
    primary = "primary" if link.decision == "approved" else "danger"
    return (
        f'<section class="card" data-approval="{html.esc(approval.id)}">'
        f"<h3>{html.esc(html.title(approval, display))}</h3>"
        f'<div class="muted">{html.esc(approval.tool)} · asked by '
        f"{html.esc(approval.requested_by or words.UNKNOWN_PERSON)}</div>"
        f'<dl class="args">{fields}</dl>'
        f"<p>You are deciding as {html.esc(link.person)}. Nothing is decided until you press "
        f"{html.esc(label)}.</p>"
        f'<form method="post">{reason}'
        f'<button class="{primary}" id="confirm">{html.esc(label)}</button></form></section>'
    )


async def confirm(request: web.Request) -> web.Response:
    found = await check(request)
    if isinstance(found, web.Response):
        return found
    parts, link, approval = found
    reason = html.posted(await request.post(), "reason")
    rt = parts.rt
    try:  # the link is spent in the decision's own transaction, or not at all
        decided = await rt.decide(
            approval.id,
            "approved" if link.decision == "approved" else "declined",
            by=link.person,
            reason=(reason or "").strip() or None,
            resume=False,
            link_nonce=link.nonce,
        )
    except (errors.DecisionRefused, errors.ApprovalNotFound) as exc:
        if isinstance(exc, errors.LinkUsed) or await rt.deliveries.email_link_used(link.nonce):
            # a second POST raced the first (refused either by the link, or by the decision
            # the first one made)
            return refused("used", "It was used a moment ago; each link works once.", 409)
        body = html.notice(words.refusal(exc), refused=True) + "<p>Nothing changed.</p>"
        return page(body, status=400)
    log.info("%s decided approval %s by e-mail link", link.person, approval.id)
    after_decision(parts.background, rt, decided)
    if decided.state == ApprovalState.PENDING:
        return page(html.notice(html.counted(decided)))
    return page(f'<h2 id="decided">{html.esc(html.outcome(decided))}</h2><p>Thank you.</p>')


def add_routes(app: web.Application) -> None:
    app.router.add_get(PATH, show)
    app.router.add_post(PATH, confirm)


__all__ = ["add_routes"]
