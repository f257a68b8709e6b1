"""The HTTP API for agents on other stacks: start runs, ask for approvals, read their state.

    POST /v1/runs             {agent, task, run_id?, requested_by?, budget?}  (idempotent by id)
    GET  /v1/runs/{id}        status, usage, pending approvals (tool, args, votes, deadline)
    POST /v1/approvals        {tool, args, approval_id?, requested_by?, policy?, callback_url?}
                              (idempotent by id)
    GET  /v1/approvals/{id}   pending | approved | declined, and by whom
    POST /v1/approvals/{id}/decision  {decision, by, reason?, args?}

Every request needs `Authorization: Bearer <token>` (the scheme in any case): without it 401,
malformed 400 with the reason, a body over 1 MiB 413; none of them changes anything. Every
error is JSON, `{"error": reason}`. Without a configured token the API is off: 503 saying so.
"""

from __future__ import annotations

import hmac
import json
import logging
import math
import re
from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeVar

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, HttpUrl, ValidationError, field_validator

from bot.tasks import Background
from runtime import Runtime, errors
from store import Approval, ApprovalState, Budget, Run
from store.records import ID_PATTERN

M = TypeVar("M", bound=BaseModel)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
RUNTIME = web.AppKey("runtime", Runtime)
BACKGROUND = web.AppKey("background", Background)
MAX_BODY = 1024**2
SLACK_USER_ID = r"[UW][A-Z0-9]{2,}"
log = logging.getLogger("signoff.api")


class RunRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent: str = Field(min_length=1)
    task: str = Field(min_length=1, max_length=20_000)
    run_id: str | None = Field(None, pattern=ID_PATTERN)
    requested_by: str | None = Field(None, max_length=64)
    budget: Budget | None = None


class ApprovalRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool: str = Field(min_length=1, max_length=200)
    args: dict[str, Any] = Field(default_factory=dict)
    approval_id: str | None = Field(None, pattern=ID_PATTERN)
    requested_by: str | None = Field(None, max_length=64)
    policy: str | None = Field(None, max_length=200)
    callback_url: HttpUrl | None = None


class DecisionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    decision: Literal["approved", "declined"]
    by: str = Field(description="the deciding human's Slack user id")
    reason: str | None = Field(None, max_length=3_000)
    args: dict[str, Any] | None = None

    @field_validator("by")
    @classmethod
    def _slack_user(cls, by: str) -> str:
        if not re.fullmatch(SLACK_USER_ID, by):
            raise ValueError(f"{by[:80]!r} is not a Slack user id (U… or W…)")
        return by


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


def error(
    status: int, reason: str, *, headers: dict[str, str] | None = None, **more: Any
) -> web.Response:
    return web.json_response({"error": reason, **more}, status=status, headers=headers)


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
    except Exception:
        log.exception("%s %s failed", request.method, request.path)
        return error(500, "internal error; the server log has the details")


def bearer_auth(token: str) -> Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]:
    """`Authorization: Bearer <token>`, the scheme compared case-insensitively (RFC 7235)."""

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not request.path.startswith("/v1/"):
            return await handler(request)
        if not token:
            return error(503, "the HTTP API is off: set SIGNOFF_API_TOKEN to turn it on")
        scheme, _, given = request.headers.get("Authorization", "").strip().partition(" ")
        valid = scheme.lower() == "bearer" and hmac.compare_digest(
            given.strip().encode(), token.encode()
        )
        if not valid:
            return error(
                401, "missing or invalid bearer token", headers={"WWW-Authenticate": "Bearer"}
            )
        return await handler(request)

    return check


async def _body(request: web.Request, model: type[M]) -> M | web.Response:
    try:
        data = await request.json(loads=_strict_json)
    except (json.JSONDecodeError, UnicodeDecodeError, LookupError):
        return error(400, "the body is not valid JSON (UTF-8)")
    except ValueError as exc:
        return error(400, str(exc))
    except RecursionError:
        return error(400, "the body is nested too deeply")
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
    # A new run starts; an existing one is driven on if it was left mid-flight.
    request.app[BACKGROUND].spawn(rt.drive(run.id), name=f"drive {run.id}")
    return web.json_response(await _run_view(rt, run), status=201 if created else 200)


async def get_run(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    try:
        run = await rt.get(request.match_info["run_id"])
    except errors.RunNotFound as exc:
        return error(404, str(exc))
    return web.json_response(await _run_view(rt, run))


async def request_approval(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    body = await _body(request, ApprovalRequest)
    if isinstance(body, web.Response):
        return body
    try:
        approval, created = await rt.request_approval(
            body.tool,
            body.args,
            approval_id=body.approval_id,
            requested_by=body.requested_by,
            policy=body.policy,
            callback_url=str(body.callback_url) if body.callback_url else None,
        )
    except errors.InvalidRequest as exc:
        return error(400, str(exc))
    return web.json_response(approval_view(approval), status=201 if created else 200)


async def get_approval(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    try:
        approval = await rt.desk.get(request.match_info["approval_id"])
    except errors.ApprovalNotFound as exc:
        return error(404, str(exc))
    return web.json_response(await _voted_view(rt, approval))


async def decide(request: web.Request) -> web.Response:
    """Record a human's decision under the same rules as Slack and the CLI; answer once it is
    durable and resume the run in the background."""
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
    if approval.state != ApprovalState.PENDING:
        work = rt.after_decision(approval)
        request.app[BACKGROUND].spawn(work, name=f"after decision {approval.id}")
    return web.json_response(await _voted_view(rt, approval))


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
    return approval.model_dump(
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
            "created_at",
        },
    )


def add_routes(app: web.Application, rt: Runtime, background: Background) -> None:
    app[RUNTIME] = rt
    app[BACKGROUND] = background
    app.router.add_post("/v1/runs", start_run)
    app.router.add_get("/v1/runs/{run_id}", get_run)
    app.router.add_post("/v1/approvals", request_approval)
    app.router.add_get("/v1/approvals/{approval_id}", get_approval)
    app.router.add_post("/v1/approvals/{approval_id}/decision", decide)


async def healthz(request: web.Request) -> web.Response:
    return web.json_response({"ok": True})


def api_app(rt: Runtime, *, token: str | None, background: Background) -> web.Application:
    """The aiohttp application `signoff serve` runs: /healthz, and the API when a bearer
    token is configured, else a 503 under /v1/ naming the setting (the Slack endpoints mount
    next to it)."""
    middlewares = [json_errors, bearer_auth(token or "")]
    app = web.Application(middlewares=middlewares, client_max_size=MAX_BODY)
    app.router.add_get("/healthz", healthz)
    if token:
        add_routes(app, rt, background)
    return app
