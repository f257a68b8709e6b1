"""The HTTP API for agents on other stacks: start runs, ask for approvals, read their state.

    POST /v1/runs             {agent, task, run_id?, requested_by?, budget?}  (idempotent by id)
                                                                      runs:write
    GET  /v1/runs/{id}        status, usage, pending approvals, answer, every approval
                                                                      runs:read
    POST /v1/runs/{id}/cancel {reason?, compensate?, compensate_shared?}  (202 while a tool
        still runs; 409 when other runs rely on what it would undo)  runs:write
    POST /v1/runs/{id}/effects/{call}/resolve {happened}  (an in-doubt page) runs:write
    POST /v1/approvals        {tool, args, approval_id?, requested_by?, policy?, callback_url?,
                               sensitive?}
                              (idempotent by id)                      approvals:request
    GET  /v1/approvals/{id}   pending | approved | declined, and by whom
                                          approvals:request, approvals:decide or runs:read
    POST /v1/approvals/{id}/decision  {decision, by, reason?, args?}  approvals:decide
    POST /v1/approvals/{id}/withdraw  the asker stopped waiting  approvals:request (its asker)
    POST /v1/approvals/{id}/cancel-cool-off, POST /v1/approvals/{id}/undo  {by}
                                        taking back what it let through (`bot.api_cool_off`)
    GET  /v1/audit?run_id=&approval_id=&since=&limit=                 audit:read
    GET  /v1/approvals?state=&run_id=&tool=&requested_by=&cursor=&limit=  (`bot.api_inbox`)
    GET  /v1/runs?status=&agent=&requested_by=&cursor=&limit=
    GET  /v1/approvals/{id}/wait?timeout=   the decision, long-polled (`bot.api_wait`)
    GET  /v1/approvals/{id}/events?timeout= the decision as server-sent events (`bot.api_events`)
    GET  /v1/approvals/{id}/deliveries      its webhook attempts (`bot.api_deliveries`)
    GET  /v1/openapi.json     this API's OpenAPI 3.1 document (`bot.openapi`)
    GET  /v1/keys             the public keys receipts are signed with (no token needed)
    GET  /v1/approvals/{id}/receipt, POST /v1/receipts/verify   (`bot.api_receipts`)
    POST /v1/envelopes, GET /v1/envelopes[/{id}], POST /v1/envelopes/{id}/confirm|revoke
                                                    budgets handed out (`bot.api_envelopes`)

Every request needs `Authorization: Bearer <token>` (`bot.http_auth`): without a known token
401, without the scope 403, over the token's rate 429 with `Retry-After`; malformed 400 with
the reason, a body over 1 MiB 413; none of them changes anything. Every error is JSON,
`{"error": reason}` (`bot.http_errors` maps refusals to statuses); a full database disk 503
`{"error": reason, "kind": "DiskFull"}` (reads still answer). Without any configured token
the API is off: 503 saying so. What a token creates or decides is audited under its name
(`token:<name>`). The request bodies are `bot.requests`' models (the CLI checks against them
too).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime

from aiohttp import web

from bot import words
from bot.api_audit import audited
from bot.api_body import parse_body as _body
from bot.api_body import refuse_unknown
from bot.api_cool_off import add_cool_off_routes
from bot.api_deliveries import add_deliveries_route
from bot.api_envelopes import add_envelope_routes
from bot.api_events import add_events_route
from bot.api_inbox import add_list_routes
from bot.api_inbox import page_limit
from bot.api_receipts import add_key_route
from bot.api_receipts import add_receipt_routes
from bot.api_wait import add_wait_route
from bot.aside import refuse_writes
from bot.callback_policy import CallbackPolicy
from bot.callback_policy import CallbackRefused
from bot.http_auth import CALLER
from bot.http_auth import RateLimiter
from bot.http_auth import authenticate
from bot.http_auth import callers
from bot.http_auth import requires
from bot.http_errors import MAX_BODY
from bot.http_errors import BadRequest
from bot.http_errors import json_errors
from bot.http_keys import BACKGROUND
from bot.http_keys import RUNTIME
from bot.json_views import approval_view
from bot.json_views import run_view
from bot.json_views import voted_view
from bot.masking import ResultMasks
from bot.masking import masked_events
from bot.openapi import add_document_route
from bot.requests import ApprovalRequest
from bot.requests import CancelRequest
from bot.requests import DecisionRequest
from bot.requests import ResolveRequest
from bot.requests import RunRequest
from bot.requests import instant
from bot.sections import ApiToken
from bot.tasks import Background
from bot.tasks import after_decision
from runtime import Actor
from runtime import Permission
from runtime import Runtime
from runtime import errors

CALLBACKS = web.AppKey("callbacks", CallbackPolicy)
MAX_AUDIT_PAGE = 10_000
DEFAULT_RATE = 600
log = logging.getLogger("signoff.api")


@requires("runs:write")
async def start_run(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    body = await _body(request, RunRequest)
    run, created = await rt.create(
        body.agent,
        body.task,
        run_id=body.run_id,
        budget=body.budget,
        requested_by=body.requested_by,
    )
    if created:
        await audited(request, "api_run_started", run_id=run.id, agent=run.agent)
    # A new run starts (in this worker, or the next one with room); an existing one is driven
    # on if it was left mid-flight.
    request.app[BACKGROUND].spawn(rt.dispatch(run.id, new=created), name=f"drive {run.id}")
    return web.json_response(await run_view(rt, run), status=201 if created else 200)


@requires("runs:read")
async def get_run(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    run = await rt.get(request.match_info["run_id"])
    await rt.check(_actor(request), Permission.READ, run)
    return web.json_response(await run_view(rt, run))


@requires("runs:write")
async def cancel_run(request: web.Request) -> web.Response:
    """Stop a run for good (its pending approvals are withdrawn); audited under the token."""
    rt = request.app[RUNTIME]
    body = await _body(request, CancelRequest) if request.body_exists else CancelRequest()
    await rt.check(_actor(request), Permission.CANCEL, await rt.get(request.match_info["run_id"]))
    run = await rt.cancel(
        request.match_info["run_id"],
        by=request[CALLER].actor,
        reason=body.reason,
        wait=False,
        compensate=body.compensate,
        compensate_shared=body.compensate_shared,
    )
    view = await run_view(rt, run)
    running = await rt.in_flight(run.id)
    if not running:
        return web.json_response(view)
    # Accepted, not done: a tool is still running and the run ends after it.
    view["in_flight"] = [{"call_id": e.call_id, "tool": e.tool} for e in running]
    relying = await rt.relying_on(running) if body.compensate else None
    view["note"] = rt.still_running(run.id, running, compensate=body.compensate, relying=relying)
    return web.json_response(view, status=202)


@requires("runs:write")
async def resolve_effect(request: web.Request) -> web.Response:
    """Settle an in-doubt effect and its page in one step (with the receipt a worker fenced
    off the run reported, if it did), then drive the run on; audited under the token."""
    rt = request.app[RUNTIME]
    body = await _body(request, ResolveRequest)
    run_id, call_id = request.match_info["run_id"], request.match_info["call_id"]
    await rt.check(_actor(request), Permission.SETTLE, await rt.settled_on(run_id, call_id))
    effect = await rt.resolve(run_id, call_id, happened=body.happened, by=request[CALLER].actor)
    request.app[BACKGROUND].spawn(rt.resume(run_id), name=f"resume {run_id}")
    view = {"call_id": effect.call_id, "tool": effect.tool, "status": effect.status.value}
    result = ResultMasks(rt.policies).result(effect.tool, effect.result)
    return web.json_response(view | {"result": result, "error": effect.error})


@requires("approvals:request")
async def request_approval(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    body = await _body(request, ApprovalRequest)
    callback_url = str(body.callback_url) if body.callback_url else None
    if callback_url:
        try:
            await request.app[CALLBACKS].check(callback_url)
        except CallbackRefused as exc:
            raise BadRequest(f"callback_url: {exc}") from None
    approval, created = await rt.request_approval(
        body.tool,
        body.args,
        approval_id=body.approval_id,
        requested_by=body.requested_by,
        policy=body.policy,
        callback_url=callback_url,
        sensitive=body.sensitive,
        resume_state=body.resume_state,
        requester_token=request[CALLER].actor,
    )
    if created:
        await audited(request, "api_approval_requested", approval_id=approval.id, tool=body.tool)
    return web.json_response(approval_view(approval), status=201 if created else 200)


@requires("approvals:request", "approvals:decide", "runs:read")
async def get_approval(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    approval = await rt.queries.approval(request.match_info["approval_id"])
    view = await voted_view(rt, approval)
    return web.json_response(view | {"resume_state": approval.resume_state})


@requires("approvals:decide")
async def decide(request: web.Request) -> web.Response:
    """Record a human's decision under the same rules as Slack and the CLI; answer once it is
    durable and resume the run in the background. The audit has the decision under the human
    (`by`) and, next to it, the token it came through."""
    rt = request.app[RUNTIME]
    body = await _body(request, DecisionRequest)
    try:
        approval = await rt.decide(
            request.match_info["approval_id"],
            body.decision,
            by=body.by,
            reason=body.reason,
            args=body.args,
            resume=False,
            separate=body.separate,
        )
    except errors.AlreadyVoted as exc:
        # The same vote again (a retry, a double click): the same answer, nothing recorded.
        again = await rt.queries.approval(request.match_info["approval_id"])
        view = await voted_view(rt, again)
        return web.json_response(view | {"already_voted": True, "note": str(exc)})
    await audited(
        request,
        "api_decision",
        run_id=approval.run_id,
        approval_id=approval.id,
        by=body.by,
        decision=body.decision,
        state=approval.state.value,
    )
    after_decision(request.app[BACKGROUND], rt, approval)
    return web.json_response(await voted_view(rt, approval))


@requires("approvals:request")
async def withdraw(request: web.Request) -> web.Response:
    """The agent that asked stopped waiting: its approval is withdrawn (the card says so)
    and a decision after it changes nothing. Only the token that asked may; withdrawing
    again answers the same."""
    rt = request.app[RUNTIME]
    approval, withdrawn = await rt.withdraw_approval(
        request.match_info["approval_id"],
        by=request[CALLER].actor,
        reason=words.AGENT_STOPPED_WAITING,
    )
    if withdrawn:
        await audited(request, "api_approval_withdrawn", approval_id=approval.id)
    return web.json_response(await voted_view(rt, approval))


@requires("audit:read")
async def audit(request: web.Request) -> web.Response:
    """Audit events oldest first, of one run or approval, at or after `since` (ISO 8601;
    UTC unless it says otherwise), at most `limit` (1000; up to 10000); `more` says whether
    there are further events (ask again with the last one's `at`)."""
    query = request.query
    refuse_unknown(query, {"run_id", "approval_id", "since", "limit"})
    since = _instant(query.get("since"))
    limit = page_limit(query.get("limit"), default=1000, most=MAX_AUDIT_PAGE)
    rt = request.app[RUNTIME]
    masks = ResultMasks(rt.policies)
    chosen = await rt.queries.audit(
        since=since,
        run_id=query.get("run_id") or None,
        approval_id=query.get("approval_id"),
        limit=limit + 1,  # one more says whether there are more
    )
    return web.json_response(
        {
            "events": [
                event.model_dump(mode="json")
                for event in await masked_events(rt.queries, chosen[:limit], masks)
            ],
            "more": len(chosen) > limit,
        }
    )


def _actor(request: web.Request) -> Actor:
    """The token the request came with, as the permission table knows it."""
    caller = request[CALLER]
    return Actor(token=caller.actor, scopes=caller.scopes)


def _instant(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        # A "+" left unescaped in a query string arrives as a space.
        return instant(text.replace(" ", "+"))
    except ValueError:
        raise BadRequest(f"since: {text[:60]!r} is not an ISO 8601 date and time") from None


def add_routes(app: web.Application) -> None:
    app.router.add_post("/v1/runs", start_run)
    app.router.add_get("/v1/runs/{run_id}", get_run)
    app.router.add_post("/v1/runs/{run_id}/cancel", cancel_run)
    app.router.add_post("/v1/runs/{run_id}/effects/{call_id}/resolve", resolve_effect)
    app.router.add_post("/v1/approvals", request_approval)
    app.router.add_get("/v1/approvals/{approval_id}", get_approval)
    app.router.add_post("/v1/approvals/{approval_id}/decision", decide)
    app.router.add_post("/v1/approvals/{approval_id}/withdraw", withdraw)
    app.router.add_get("/v1/audit", audit)
    add_list_routes(app)
    add_wait_route(app)
    add_events_route(app)
    add_deliveries_route(app)
    add_document_route(app)
    add_receipt_routes(app)
    add_envelope_routes(app)
    add_cool_off_routes(app)


async def healthz(request: web.Request) -> web.Response:
    return web.json_response({"ok": True})


def api_app(
    rt: Runtime,
    *,
    background: Background,
    token: str | None = None,
    tokens: Mapping[str, ApiToken] | None = None,
    callbacks: CallbackPolicy | None = None,
    rate_per_minute: int = DEFAULT_RATE,
) -> web.Application:
    """The aiohttp application `signoff serve` runs: /healthz, and the API when a token is
    configured (`token`, the legacy one with every scope, and/or named `tokens`), else a
    503 under /v1/ naming the settings (the Slack endpoints mount next to it). Callback URLs
    are checked against `callbacks` (by default: public https hosts only)."""
    known = callers(token, tokens)
    limiter = RateLimiter(rate_per_minute)
    app = web.Application(
        middlewares=[refuse_writes(rt.aside), json_errors, authenticate(known, limiter)],
        client_max_size=MAX_BODY,
    )
    app.router.add_get("/healthz", healthz)
    add_key_route(app)  # public keys, served with or without API tokens
    app[RUNTIME] = rt
    app[BACKGROUND] = background
    app[CALLBACKS] = callbacks or CallbackPolicy()
    if known:
        add_routes(app)
    return app
