"""Waiting for a decision without polling: `GET /v1/approvals/{id}/wait?timeout=` answers
as soon as the approval is decided, or with it still pending once `timeout` seconds (1-60,
default 25) have passed; a client asks again to wait longer.

A decision made in this process (the API, Slack, a deadline) wakes the waiters at once
(`Runtime.wait_decided`, which holds one event per approval waited on). One
made elsewhere (another replica, the CLI) is seen by a re-read every `RECHECK` seconds, one
row by primary key: the client never polls, the server reads a row a second at most.

Each wait is also its waiter's heartbeat (`Runtime.keep_waiting`): a client that stops asking
(killed, gone) lets it lapse, and the approval then says nobody is waiting for its answer.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from bot.api_body import refuse_unknown
from bot.http_auth import requires
from bot.http_errors import BadRequest
from bot.http_keys import RUNTIME
from bot.json_views import approval_view
from runtime import Runtime
from runtime.records import Approval
from runtime.records import ApprovalState

RECHECK = 1.0


@dataclass(frozen=True)
class Timeouts:
    """The `timeout` seconds a request may ask to wait: `default` when it gives none, at most
    `most`, written in up to `digits` digits and three decimals."""

    default: float
    most: int
    digits: int


WAIT = Timeouts(default=25, most=60, digits=3)


@requires("approvals:request", "approvals:decide", "runs:read")
async def wait_for_decision(request: web.Request) -> web.Response:
    approval, seconds = await waited_on(request, WAIT)
    rt = request.app[RUNTIME]
    if approval.state == ApprovalState.PENDING:
        await rt.keep_waiting(approval.id, seconds)  # the waiter's heartbeat
    async for latest in rechecks(rt, approval, seconds):
        approval = latest
    return web.json_response(await decision_view(rt, approval))


async def waited_on(request: web.Request, timeouts: Timeouts) -> tuple[Approval, float]:
    """The approval the request waits on (unknown: 404) and for how many seconds at most (its
    only query parameter, `timeout`)."""
    refuse_unknown(request.query, {"timeout"}, name_known=True)
    seconds = _seconds(request.query.get("timeout"), timeouts)
    return await request.app[RUNTIME].queries.approval(request.match_info["approval_id"]), seconds


def _seconds(text: str | None, timeouts: Timeouts) -> float:
    if text is None:
        return timeouts.default
    number = rf"[0-9]{{1,{timeouts.digits}}}(\.[0-9]{{1,3}})?"
    if not re.fullmatch(number, text) or not 0 < float(text) <= timeouts.most:
        raise BadRequest(
            f"timeout: {text[:20]!r} is not a number of seconds from 0 to {timeouts.most}"
        )
    return float(text)


async def rechecks(rt: Runtime, approval: Approval, seconds: float) -> AsyncIterator[Approval]:
    """The approval read again each time it may have been decided (woken by this process's
    decision, or `RECHECK` seconds on), until it is decided or `seconds` have passed."""
    loop = asyncio.get_running_loop()
    until = loop.time() + seconds
    while approval.state == ApprovalState.PENDING and (left := until - loop.time()) > 0:
        await rt.wait_decided(approval.id, min(left, RECHECK))
        approval = await rt.queries.approval(approval.id)
        yield approval


async def decision_view(rt: Runtime, approval: Approval) -> dict[str, Any]:
    """What a waiter is answered: the approval with its `resume_state` and votes."""
    return approval_view(approval, resume_state=True) | {"votes": await rt.votes(approval.id)}


def add_wait_route(app: web.Application) -> None:
    app.router.add_get("/v1/approvals/{approval_id}/wait", wait_for_decision)
