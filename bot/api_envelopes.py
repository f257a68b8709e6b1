"""Envelopes (budgets an approver hands out) over HTTP:

    POST /v1/envelopes               {tool, when, by, reason, max_amount?, max_calls?, amount?,
                                      expires_in_seconds?, channel?}       approvals:decide
    GET  /v1/envelopes?tool=         newest first          approvals:decide or runs:read
    GET  /v1/envelopes/{id}                                approvals:decide or runs:read
    POST /v1/envelopes/{id}/confirm  {by}  a second writer's confirmation  approvals:decide
    POST /v1/envelopes/{id}/revoke   {by}  its author or a rule-writer      approvals:decide

Each acts through `Runtime.spend` under the same checks as Slack and the CLI (`by` must be
allowed: 403 otherwise, changing nothing), and is audited under the person, with the token
it came through beside it (`api_envelope`).
"""

from __future__ import annotations

from collections.abc import Awaitable
from datetime import timedelta
from typing import Any
from typing import Protocol

from aiohttp import web

from bot.api_audit import audited
from bot.api_body import parse_body
from bot.api_body import refuse_unknown
from bot.http_auth import requires
from bot.http_keys import RUNTIME
from bot.requests import EnvelopeChangeRequest
from bot.requests import EnvelopeRequest
from runtime import Runtime
from runtime import spend
from runtime.records import Envelope

LIST_LIMIT = 100


def envelope_view(rt: Runtime, envelope: Envelope) -> dict[str, Any]:
    now = rt.clock()
    currency = rt.spend.currency(envelope.tool, envelope.amount)
    return {
        "id": envelope.id,
        "tool": envelope.tool,
        "when": envelope.condition,
        "amount": envelope.amount,
        "max_amount": envelope.max_amount,
        "max_calls": envelope.max_calls,
        "used_amount": envelope.used_amount,
        "used_calls": envelope.used_calls,
        "status": envelope.status(now),
        "mode": envelope.mode,
        "author": envelope.author,
        "reason": envelope.reason,
        "needs_second": envelope.needs_second,
        "confirmed_by": envelope.confirmed_by,
        "revoked_by": envelope.revoked_by,
        "channel": envelope.channel,
        "created_at": envelope.created_at.isoformat(),
        "expires_at": envelope.expires_at.isoformat(),
        "line": spend.envelope_line(envelope, currency, now),
    }


@requires("approvals:decide")
async def create_envelope(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    body = await parse_body(request, EnvelopeRequest)
    seconds = body.expires_in_seconds
    envelope = await rt.spend.make(
        body.tool,
        body.when,
        author=body.by,
        reason=body.reason,
        max_amount=body.max_amount,
        max_calls=body.max_calls,
        amount=body.amount,
        expires_in=timedelta(seconds=seconds) if seconds is not None else None,
        channel=body.channel,
    )
    await _audit(request, envelope, "made", body.by)
    return web.json_response(envelope_view(rt, envelope), status=201)


@requires("approvals:decide", "runs:read")
async def list_envelopes(request: web.Request) -> web.Response:
    refuse_unknown(request.query, {"tool"})
    rt = request.app[RUNTIME]
    found = await rt.spend.list(tool=request.query.get("tool") or None, limit=LIST_LIMIT)
    return web.json_response({"envelopes": [envelope_view(rt, e) for e in found]})


@requires("approvals:decide", "runs:read")
async def get_envelope(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    envelope = await rt.spend.get(request.match_info["envelope_id"])
    return web.json_response(envelope_view(rt, envelope))


@requires("approvals:decide")
async def confirm_envelope(request: web.Request) -> web.Response:
    return await _change(request, request.app[RUNTIME].spend.confirm, "confirmed")


@requires("approvals:decide")
async def revoke_envelope(request: web.Request) -> web.Response:
    return await _change(request, request.app[RUNTIME].spend.revoke, "revoked")


class _Change(Protocol):
    """`rt.spend.confirm` or `rt.spend.revoke`."""

    def __call__(self, envelope_id: str, *, by: str) -> Awaitable[Envelope]: ...


async def _change(request: web.Request, change: _Change, what: str) -> web.Response:
    """The envelope the path names, changed by the person the body names; audited."""
    body = await parse_body(request, EnvelopeChangeRequest)
    envelope = await change(request.match_info["envelope_id"], by=body.by)
    await _audit(request, envelope, what, body.by)
    return web.json_response(envelope_view(request.app[RUNTIME], envelope))


async def _audit(request: web.Request, envelope: Envelope, what: str, by: str) -> None:
    """The token the change came through, beside the person's own event."""
    await audited(request, "api_envelope", envelope_id=envelope.id, what=what, by=by)


def add_envelope_routes(app: web.Application) -> None:
    app.router.add_post("/v1/envelopes", create_envelope)
    app.router.add_get("/v1/envelopes", list_envelopes)
    app.router.add_get("/v1/envelopes/{envelope_id}", get_envelope)
    app.router.add_post("/v1/envelopes/{envelope_id}/confirm", confirm_envelope)
    app.router.add_post("/v1/envelopes/{envelope_id}/revoke", revoke_envelope)
