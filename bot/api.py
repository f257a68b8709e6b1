"""The HTTP API for agents on other stacks: start runs, ask for approvals, read their state.

    POST /v1/runs             {agent, task, run_id?, requested_by?, budget?}  (idempotent by id)
                                                                      runs:write
    GET  /v1/runs/{id}        status, usage, pending approvals        runs:read
    POST /v1/runs/{id}/cancel {reason?}                               runs:write
    POST /v1/approvals        {tool, args, approval_id?, requested_by?, policy?, callback_url?,
                               sensitive?}
                              (idempotent by id)                      approvals:request
    GET  /v1/approvals/{id}   pending | approved | declined, and by whom
                                          approvals:request, approvals:decide or runs:read
    POST /v1/approvals/{id}/decision  {decision, by, reason?, args?}  approvals:decide
    GET  /v1/audit?run_id=&approval_id=&since=&limit=                 audit:read

Every request needs `Authorization: Bearer <token>` (`bot.api_auth`): without a known token
401, without the scope 403, over the token's rate 429 with `Retry-After`; malformed 400 with
the reason, a body over 1 MiB 413; none of them changes anything. Every error is JSON,
`{"error": reason}`; a full database disk 503 `{"error": reason, "kind": "DiskFull"}`
(reads still answer). Without any configured token the API is off: 503 saying so. What a
token creates or decides is audited under its name (`token:<name>`). One job, the handlers
of these routes; it is long because each route validates its body and maps refusals itself.
The request bodies are `bot.requests`' models (the CLI checks against them too).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

from aiohttp import web
from pydantic import BaseModel, ValidationError

from bot.api_auth import CALLER, Handler, RateLimiter, authenticate, callers, error, requires
from bot.callback_policy import CallbackPolicy, CallbackRefused
from bot.requests import ApprovalRequest, CancelRequest, DecisionRequest, RunRequest
from bot.settings import ApiToken
from bot.tasks import Background
from runtime import Runtime, errors
from store import Approval, ApprovalState, AuditEvent, Run
from store.errors import DiskFull
from store.limits import MAX_DEPTH, plain_reason

M = TypeVar("M", bound=BaseModel)
RUNTIME = web.AppKey("runtime", Runtime)
BACKGROUND = web.AppKey("background", Background)
CALLBACKS = web.AppKey("callbacks", CallbackPolicy)
MAX_BODY = 1024**2
MAX_AUDIT_PAGE = 10_000
DEFAULT_RATE = 600
log = logging.getLogger("signoff.api")


# How the runtime's refusals of a decision answer over HTTP (first match wins).
REFUSALS: tuple[tuple[type[errors.SignoffRuntimeError], int], ...] = (
    (errors.ApprovalNotFound, 404),
    (errors.AlreadyDecided, 409),  # and expired: declined at its deadline
    (errors.AlreadyVoted, 409),
    (errors.NotAnApprover, 403),
    (errors.SelfApproval, 403),
    (errors.EditRefused, 400),
    (errors.InvalidRequest, 400),
)


@web.middleware
async def json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Under /v1/ every error is JSON: unknown paths, wrong methods, oversized bodies, bugs."""
    if not request.path.startswith("/v1/"):
        return await handler(request)
    try:
        return await handler(request)
    except web.HTTPRequestEntityTooLarge:
        return error(413, f"the body is over the limit of {MAX_BODY} bytes")
    except web.HTTPNotFound:
        return error(404, f"no endpoint {request.method} {request.path}")
    except web.HTTPMethodNotAllowed as exc:
        allowed = ", ".join(sorted(exc.allowed_methods))
        text = f"{request.method} is not allowed on {request.path} (allowed: {allowed})"
        return error(405, text, headers={"Allow": allowed})
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return error(exc.status, exc.reason)
    except DiskFull as exc:  # nothing was written; reads go on; writes resume once space is freed
        log.error("%s %s: %s", request.method, request.path, exc)
        return error(503, str(exc), kind="DiskFull", headers={"Retry-After": "30"})
    except Exception:
        log.exception("%s %s failed", request.method, request.path)
        return error(500, "internal error; the server log has the details")


async def _body(request: web.Request, model: type[M]) -> M | web.Response:
    try:
        data = await request.json(loads=_strict_json)
    except (json.JSONDecodeError, UnicodeDecodeError, LookupError):
        return error(400, "the body is not valid JSON (UTF-8)")
    except ValueError as exc:
        return error(400, plain_reason(exc))
    except RecursionError:
        return error(400, f"the body is nested deeper than the limit of {MAX_DEPTH} levels")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        return error(400, f"{where}: {first['msg']}")


def _strict_json(text: str) -> Any:
    """JSON as RFC 8259 has it: NaN and Infinity are not numbers anyone can approve."""

    def refuse(constant: str) -> Any:
        raise ValueError(f"the body holds {constant}, which JSON does not allow")

    def finite(literal: str) -> float:
        value = float(literal)
        if math.isinf(value):
            raise ValueError(f"the body holds {literal[:40]}, too large for a number")
        return value

    return json.loads(text, parse_constant=refuse, parse_float=finite)


@requires("runs:write")
async def start_run(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    body = await _body(request, RunRequest)
    if isinstance(body, web.Response):
        return body
    try:
        run, created = await rt.create(
            body.agent,
            body.task,
            run_id=body.run_id,
            budget=body.budget,
            requested_by=body.requested_by,
        )
    except (errors.UnknownAgent, errors.InvalidRequest) as exc:
        return error(400, str(exc))
    if created:
        await _audit(request, "api_run_started", run_id=run.id, agent=run.agent)
    # A new run starts; an existing one is driven on if it was left mid-flight.
    request.app[BACKGROUND].spawn(rt.drive(run.id), name=f"drive {run.id}")
    return web.json_response(await _run_view(rt, run), status=201 if created else 200)


@requires("runs:read")
async def get_run(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    try:
        run = await rt.get(request.match_info["run_id"])
    except errors.RunNotFound as exc:
        return error(404, str(exc))
    return web.json_response(await _run_view(rt, run))


@requires("runs:write")
async def cancel_run(request: web.Request) -> web.Response:
    """Stop a run for good (its pending approvals are withdrawn); audited under the token."""
    rt = request.app[RUNTIME]
    body = await _body(request, CancelRequest) if request.body_exists else CancelRequest()
    if isinstance(body, web.Response):
        return body
    try:
        run = await rt.cancel(
            request.match_info["run_id"], by=request[CALLER].actor, reason=body.reason
        )
    except errors.RunNotFound as exc:
        return error(404, str(exc))
    except errors.InvalidRequest as exc:  # done or cancelled already
        return error(409, str(exc))
    return web.json_response(await _run_view(rt, run))


@requires("approvals:request")
async def request_approval(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    body = await _body(request, ApprovalRequest)
    if isinstance(body, web.Response):
        return body
    callback_url = str(body.callback_url) if body.callback_url else None
    if callback_url:
        try:
            await request.app[CALLBACKS].check(callback_url)
        except CallbackRefused as exc:
            return error(400, f"callback_url: {exc}")
    try:
        approval, created = await rt.request_approval(
            body.tool,
            body.args,
            approval_id=body.approval_id,
            requested_by=body.requested_by,
            policy=body.policy,
            callback_url=callback_url,
            sensitive=body.sensitive,
        )
    except errors.InvalidRequest as exc:
        return error(400, str(exc))
    if created:
        await _audit(request, "api_approval_requested", approval_id=approval.id, tool=body.tool)
    return web.json_response(approval_view(approval), status=201 if created else 200)


@requires("approvals:request", "approvals:decide", "runs:read")
async def get_approval(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    try:
        approval = await rt.desk.get(request.match_info["approval_id"])
    except errors.ApprovalNotFound as exc:
        return error(404, str(exc))
    return web.json_response(await _voted_view(rt, approval))


@requires("approvals:decide")
async def decide(request: web.Request) -> web.Response:
    """Record a human's decision under the same rules as Slack and the CLI; answer once it is
    durable and resume the run in the background. The audit has the decision under the human
    (`by`) and, next to it, the token it came through."""
    rt = request.app[RUNTIME]
    body = await _body(request, DecisionRequest)
    if isinstance(body, web.Response):
        return body
    try:
        approval = await rt.decide(
            request.match_info["approval_id"],
            body.decision,
            by=body.by,
            reason=body.reason,
            args=body.args,
            resume=False,
        )
    except errors.SignoffRuntimeError as exc:
        return _refused(exc)
    await _audit(
        request,
        "api_decision",
        run_id=approval.run_id,
        approval_id=approval.id,
        by=body.by,
        decision=body.decision,
        state=approval.state.value,
    )
    if approval.state != ApprovalState.PENDING:
        work = rt.after_decision(approval)
        request.app[BACKGROUND].spawn(work, name=f"after decision {approval.id}")
    return web.json_response(await _voted_view(rt, approval))


@requires("audit:read")
async def audit(request: web.Request) -> web.Response:
    """Audit events oldest first, of one run or approval, at or after `since` (ISO 8601;
    UTC unless it says otherwise), at most `limit` (1000; up to 10000); `more` says whether
    there are further events (ask again with the last one's `at`)."""
    query = request.query
    unknown = sorted(set(query) - {"run_id", "approval_id", "since", "limit"})
    if unknown:
        return error(400, f"unknown query parameter(s): {', '.join(unknown)}")
    try:
        since = _instant(query.get("since"))
        limit = _limit(query.get("limit"))
    except ValueError as exc:
        return error(400, str(exc))
    chosen = await request.app[RUNTIME].store.list_audit(
        since=since,
        run_id=query.get("run_id") or None,
        approval_id=query.get("approval_id"),
        limit=limit + 1,  # one more says whether there are more
    )
    return web.json_response(
        {
            "events": [event.model_dump(mode="json") for event in chosen[:limit]],
            "more": len(chosen) > limit,
        }
    )


def _instant(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        # A "+" left unescaped in a query string arrives as a space.
        when = datetime.fromisoformat(text.replace(" ", "+"))
    except ValueError:
        raise ValueError(f"since: {text[:60]!r} is not an ISO 8601 date and time") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _limit(text: str | None) -> int:
    if text is None:
        return 1000
    if not text.isdigit() or not 1 <= int(text) <= MAX_AUDIT_PAGE:
        raise ValueError(f"limit: {text[:20]!r} is not a number from 1 to {MAX_AUDIT_PAGE}")
    return int(text)


async def _audit(
    request: web.Request,
    action: str,
    *,
    run_id: str | None = None,
    approval_id: str | None = None,
    **detail: Any,
) -> None:
    """One audit event naming the token the request came with."""
    rt = request.app[RUNTIME]
    caller = request[CALLER]
    await rt.store.record_event(
        AuditEvent(
            action=action,
            actor=caller.actor,
            run_id=run_id,
            approval_id=approval_id,
            detail={"token": caller.name, **detail},
            at=rt.clock(),
        )
    )


def _refused(exc: errors.SignoffRuntimeError) -> web.Response:
    status = next((code for kind, code in REFUSALS if isinstance(exc, kind)), None)
    if status is None:
        raise exc
    decided = getattr(exc, "approval", None)
    more = {"approval": approval_view(decided)} if isinstance(decided, Approval) else {}
    return error(status, str(exc), **more)


async def _run_view(rt: Runtime, run: Run) -> dict[str, Any]:
    pending = await rt.approvals(run.id, state=ApprovalState.PENDING)
    view = run.model_dump(mode="json", exclude={"lease_owner", "lease_expires_at"})
    view["pending_approvals"] = [await _voted_view(rt, a) for a in pending]
    return view


async def _voted_view(rt: Runtime, approval: Approval) -> dict[str, Any]:
    """The approval with who approved it so far (a quorum fills up vote by vote)."""
    return approval_view(approval) | {"votes": await rt.store.list_votes(approval.id)}


def approval_view(approval: Approval) -> dict[str, Any]:
    """The approval as the API shows it: sensitive arguments masked."""
    return approval.shown().model_dump(
        mode="json",
        include={
            "id",
            "tool",
            "args",
            "approved_args",
            "policy",
            "state",
            "run_id",
            "call_id",
            "decided_by",
            "decided_at",
            "reason",
            "requested_by",
            "deadline",
            "required_approvals",
            "duplicate_of",
            "created_at",
        },
    )


def add_routes(app: web.Application) -> None:
    app.router.add_post("/v1/runs", start_run)
    app.router.add_get("/v1/runs/{run_id}", get_run)
    app.router.add_post("/v1/runs/{run_id}/cancel", cancel_run)
    app.router.add_post("/v1/approvals", request_approval)
    app.router.add_get("/v1/approvals/{approval_id}", get_approval)
    app.router.add_post("/v1/approvals/{approval_id}/decision", decide)
    app.router.add_get("/v1/audit", audit)


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
        middlewares=[json_errors, authenticate(known, limiter)], client_max_size=MAX_BODY
    )
    app.router.add_get("/healthz", healthz)
    app[RUNTIME] = rt
    app[BACKGROUND] = background
    app[CALLBACKS] = callbacks or CallbackPolicy()
    if known:
        add_routes(app)
    return app
