"""An approval's decision as a server-sent event stream:

    GET /v1/approvals/{id}/events?timeout=   approvals:request, approvals:decide or runs:read

`text/event-stream`: an `approval` event with the approval as it is (JSON, as GET answers it,
`resume_state` included) at once, and another when it is decided; the stream ends after the
decision, or after `timeout` seconds (1-3600, default 300) with it still pending (connect
again to wait longer). A comment line every `KEEPALIVE` seconds keeps proxies from closing an
idle stream, and each one written is the listener's heartbeat (`Runtime.keep_waiting`).
Decisions are seen as `bot.api_wait`'s long poll sees them (its waiters, and a re-read every
second for decisions made in another process).
"""

from __future__ import annotations

import asyncio
import contextlib
import json

from aiohttp import web

from bot.api_wait import Timeouts
from bot.api_wait import decision_view
from bot.api_wait import rechecks
from bot.api_wait import waited_on
from bot.http_auth import requires
from bot.http_keys import RUNTIME
from runtime import Runtime
from runtime.records import Approval
from runtime.records import ApprovalState

KEEPALIVE = 15.0
STREAM = Timeouts(default=300, most=3600, digits=4)


@requires("approvals:request", "approvals:decide", "runs:read")
async def stream_decision(request: web.Request) -> web.StreamResponse:
    approval, seconds = await waited_on(request, STREAM)  # unknown: 404, as JSON
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
    if approval.state == ApprovalState.PENDING:
        await rt.keep_waiting(approval.id, KEEPALIVE)  # the listener's heartbeat
    await response.write(await _event(rt, approval))
    loop = asyncio.get_running_loop()
    quiet_since = loop.time()
    async for latest in rechecks(rt, approval, seconds):
        if latest.state != ApprovalState.PENDING:
            await response.write(await _event(rt, latest))
        elif loop.time() - quiet_since >= KEEPALIVE:
            await response.write(b": keep-alive\n\n")
            await rt.keep_waiting(approval.id, KEEPALIVE)  # written: still there
            quiet_since = loop.time()
    await response.write_eof()


async def _event(rt: Runtime, approval: Approval) -> bytes:
    return f"event: approval\ndata: {json.dumps(await decision_view(rt, approval))}\n\n".encode()


def add_events_route(app: web.Application) -> None:
    app.router.add_get("/v1/approvals/{approval_id}/events", stream_decision)
