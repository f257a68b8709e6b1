"""Taking back what an approval let through (issue 42.6), over HTTP:

    POST /v1/approvals/{id}/cancel-cool-off  {by}  the call in its cool-off never runs
    POST /v1/approvals/{id}/undo             {by}  the call that ran is undone, once
                                                                      approvals:decide

Both act for the person `by`, who must be an approver of that approval (the permission
table's `cancel_cool_off` and `undo` rows), and are audited under the token beside the
runtime's own event. Too late (the call ran, the undo window closed, someone undid it
already) is a 409 that says so, and nothing changes.
"""

from __future__ import annotations

from aiohttp import web

from bot.api_audit import audited
from bot.api_body import parse_body
from bot.http_auth import CALLER
from bot.http_auth import requires
from bot.http_keys import RUNTIME
from bot.json_views import voted_view
from bot.requests import PersonRequest
from runtime import Actor
from runtime import Approval
from runtime import Permission


@requires("approvals:decide")
async def cancel_cool_off(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    approval, by = await _allowed(request, Permission.CANCEL_COOL_OFF)
    cancelled = await rt.cancel_cool_off(approval.id, by=by)
    await audited(
        request, "api_cool_off_cancelled", run_id=cancelled.run_id, approval_id=cancelled.id, by=by
    )
    return web.json_response(await voted_view(rt, cancelled))


@requires("approvals:decide")
async def undo(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    approval, by = await _allowed(request, Permission.UNDO)
    report = await rt.undo(approval.id, by=by)
    await audited(request, "api_undo", run_id=approval.run_id, approval_id=approval.id, by=by)
    undone = await rt.queries.approval(approval.id)
    body = await voted_view(rt, undone) | {"undo": report.as_dict()}
    if undone.undo_error is not None:  # the compensator failed: not undone; on-call paged
        error = f"approval {approval.id} is not undone: {undone.undo_error}"
        return web.json_response(body | {"error": error}, status=502)
    return web.json_response(body)


async def _allowed(request: web.Request, permission: Permission) -> tuple[Approval, str]:
    """The body's person and the path's approval, once the permission table lets that
    person (acting through this token) do `permission` to it; raises otherwise."""
    rt, caller = request.app[RUNTIME], request[CALLER]
    body = await parse_body(request, PersonRequest)
    approval = await rt.queries.approval(request.match_info["approval_id"])
    actor = Actor(token=caller.actor, scopes=caller.scopes, person=body.by)
    await rt.check(actor, permission, approval)
    return approval, body.by


def add_cool_off_routes(app: web.Application) -> None:
    app.router.add_post("/v1/approvals/{approval_id}/cancel-cool-off", cancel_cool_off)
    app.router.add_post("/v1/approvals/{approval_id}/undo", undo)
