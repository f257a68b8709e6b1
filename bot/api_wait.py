"""Waiting for a decision without polling: `GET /v1/approvals/{id}/wait?timeout=` answers
as soon as the approval is decided, or with it still pending once `timeout` seconds (1-60,
default 25) have passed; a client asks again to wait longer.

A decision made in this process (the API, Slack, a deadline) wakes the waiters at once
(`Runtime.wait_decided`, which holds one event per approval waited on). One
made elsewhere (another replica, the CLI) is seen by a re-read every `RECHECK` seconds, one
row by primary key: the client never polls, the server reads a row a second at most.
"""

from __future__ import annotations

import asyncio
import re

from aiohttp import web

from bot.api_auth import requires
from bot.api_errors import BadRequest
from bot.api_keys import RUNTIME
from bot.api_views import approval_view
from runtime.records import ApprovalState

RECHECK = 1.0
MAX_WAIT = 60
DEFAULT_WAIT = 25


@requires("approvals:request", "approvals:decide", "runs:read")
async def wait_for_decision(request: web.Request) -> web.Response:
    unknown = sorted(set(request.query) - {"timeout"})
    if unknown:
        raise BadRequest(f"unknown query parameter(s): {', '.join(unknown)} (use timeout)")
    seconds = _timeout(request.query.get("timeout"))
    rt = request.app[RUNTIME]
    approval = await rt.queries.approval(request.match_info["approval_id"])
    loop = asyncio.get_running_loop()
    until = loop.time() + seconds
    while approval.state == ApprovalState.PENDING and (left := until - loop.time()) > 0:
        await rt.wait_decided(approval.id, min(left, RECHECK))
        approval = await rt.queries.approval(approval.id)
    view = approval_view(approval, resume_state=True)
    return web.json_response(view | {"votes": await rt.votes(approval.id)})


def _timeout(text: str | None) -> float:
    if text is None:
        return DEFAULT_WAIT
    if not re.fullmatch(r"[0-9]{1,3}(\.[0-9]{1,3})?", text) or not 0 < float(text) <= MAX_WAIT:
        raise BadRequest(f"timeout: {text[:20]!r} is not a number of seconds from 0 to 60")
    return float(text)


def add_wait_route(app: web.Application) -> None:
    app.router.add_get("/v1/approvals/{approval_id}/wait", wait_for_decision)
