"""The HTTP API for agents on other stacks: start runs, ask for approvals, read their state.

    POST /v1/runs             {agent, task, run_id?, requested_by?, budget?}  (idempotent by id)
    GET  /v1/runs/{id}        status, usage, pending approvals
    POST /v1/approvals        {tool, args, approval_id?, requested_by?, policy?, callback_url?}
                              (idempotent by id)
    GET  /v1/approvals/{id}   pending | approved | declined, and by whom

Every request needs `Authorization: Bearer <token>`: without it 401, malformed 400 with the
reason; neither changes anything.
"""

from __future__ import annotations

import hmac
import json
import math
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, HttpUrl, ValidationError

from bot.tasks import Background
from runtime import Runtime, errors
from store import Approval, ApprovalState, Budget, Run
from store.records import ID_PATTERN

M = TypeVar("M", bound=BaseModel)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
RUNTIME = web.AppKey("runtime", Runtime)
BACKGROUND = web.AppKey("background", Background)


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


def error(status: int, reason: str) -> web.Response:
    return web.json_response({"error": reason}, status=status)


def bearer_auth(token: str) -> Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]:
    expected = f"Bearer {token}".encode()

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path.startswith("/v1/"):
            given = request.headers.get("Authorization", "").encode()
            if not token or not hmac.compare_digest(given, expected):
                return error(401, "missing or invalid bearer token")
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
    return web.json_response(approval_view(approval))


async def _run_view(rt: Runtime, run: Run) -> dict[str, Any]:
    pending = await rt.approvals(run.id, state=ApprovalState.PENDING)
    view = run.model_dump(mode="json", exclude={"lease_owner", "lease_expires_at"})
    view["pending_approvals"] = [approval_view(a) for a in pending]
    return view


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


async def healthz(request: web.Request) -> web.Response:
    return web.json_response({"ok": True})


def api_app(rt: Runtime, *, token: str | None, background: Background) -> web.Application:
    """The aiohttp application `signoff serve` runs: /healthz, and the API when a bearer
    token is configured (the Slack endpoints mount next to it)."""
    app = web.Application(middlewares=[bearer_auth(token or "")], client_max_size=1024**2)
    app.router.add_get("/healthz", healthz)
    if token:
        add_routes(app, rt, background)
    return app
