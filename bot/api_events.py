"""An approval's decision as a server-sent event stream:

    GET /v1/approvals/{id}/events?timeout=   approvals:request, approvals:decide or runs:read

`text/event-stream`: an `approval` event with the approval as it is (JSON, as GET answers it,
`resume_state` included) at once, and another when it is decided; the stream ends after the
decision, or after `timeout` seconds (1-3600, default 300) with it still pending (connect
again to wait longer). A comment line every `KEEPALIVE` seconds keeps proxies from closing an
idle stream. Decisions are seen as `bot.api_wait`'s long poll sees them (its waiters, and a
re-read every second for decisions made in another process).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from typing import Any

from aiohttp import web

from bot.api_auth import requires
from bot.api_errors import BadRequest
from bot.api_keys import RUNTIME
from bot.api_views import approval_view
from bot.api_wait import RECHECK
from runtime.records import Approval, ApprovalState

KEEPALIVE = 15.0
MAX_STREAM = 3600
DEFAULT_STREAM = 300


@requires("approvals:request", "approvals:decide", "runs:read")
async def stream_decision(request: web.Request) -> web.StreamResponse:
    unknown = sorted(set(request.query) - {"timeout"})
    if unknown:
        raise BadRequest(f"unknown query parameter(s): {', '.join(unknown)} (use timeout)")
    seconds = _timeout(request.query.get("timeout"))
    rt = request.app[RUNTIME]
    approval = await rt.queries.approval(request.match_info["approval_id"])  # unknown: 404, as JSON
    response = web.StreamResponse(headers={"Cache-Control": "no-cache"})
    response.content_type = "text/event-stream"
    await response.prepare(request)
    with contextlib.suppress(ConnectionResetError):  # the client left: nothing is wrong
        await _stream(request, response, approval, seconds)
    return response


async def _stream(
    request: web.Request, response: web.StreamResponse, approval: Approval, seconds: float
) -> None:
    rt = request.app[RUNTIME]
    await response.write(await _event(request, approval))
    loop = asyncio.get_running_loop()
    until = loop.time() + seconds
    quiet_since = loop.time()
    while approval.state == ApprovalState.PENDING and (left := until - loop.time()) > 0:
        await rt.wait_decided(approval.id, min(left, RECHECK))
        approval = await rt.queries.approval(approval.id)
        if approval.state != ApprovalState.PENDING:
            await response.write(await _event(request, approval))
        elif loop.time() - quiet_since >= KEEPALIVE:
            await response.write(b": keep-alive\n\n")
            quiet_since = loop.time()
    await response.write_eof()


async def _event(request: web.Request, approval: Approval) -> bytes:
    votes = await request.app[RUNTIME].votes(approval.id)
    view: dict[str, Any] = approval_view(approval, resume_state=True) | {"votes": votes}
    return f"event: approval\ndata: {json.dumps(view)}\n\n".encode()


def _timeout(text: str | None) -> float:
    if text is None:
        return DEFAULT_STREAM
    if not re.fullmatch(r"[0-9]{1,4}(\.[0-9]{1,3})?", text) or not 0 < float(text) <= MAX_STREAM:
        raise BadRequest(f"timeout: {text[:20]!r} is not a number of seconds from 0 to 3600")
    return float(text)


def add_events_route(app: web.Application) -> None:
    app.router.add_get("/v1/approvals/{approval_id}/events", stream_decision)
