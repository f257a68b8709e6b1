"""Waiting for a decision on its server-sent event stream, `GET /v1/approvals/{id}/events`:
the server sends the approval at once and again when it is decided, then ends the stream
(or ends it after `timeout` seconds with the approval still pending). Used by
`AsyncClient.wait(..., stream=True)`; aiohttp only, imported when a caller streams.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from signoff.calls import Call
from signoff.calls import Settings
from signoff.calls import _segment
from signoff.calls import parse
from signoff.errors import ApiError
from signoff.models import Approval

KEEPALIVE = 15.0
"""The server's longest silence on a stream (a comment line); a read waits this and more."""
MAX_STREAM = 3600.0


def events_call(approval_id: str, seconds: float) -> Call[Approval]:
    path = f"/v1/approvals/{_segment(approval_id)}/events"
    query = {"timeout": f"{min(seconds, MAX_STREAM):.3f}"}
    return Call("GET", path, Approval, query=query, read_timeout=KEEPALIVE + 15)


async def until_decided(
    session: Any, settings: Settings, approval_id: str, seconds: float
) -> Approval:
    """The last approval the stream sent: decided, or still pending when the stream ended."""
    import aiohttp

    call = events_call(approval_id, seconds)
    timeout = aiohttp.ClientTimeout(
        total=None, sock_connect=settings.timeout, sock_read=call.read_timeout
    )
    headers = {"Accept": "text/event-stream"}
    async with session.get(call.url(settings.url), timeout=timeout, headers=headers) as response:
        if response.status != 200:
            return parse(call, response.status, await response.text())  # raises ApiError
        last: Approval | None = None
        async for data in _data_of(response.content):
            last = Approval.model_validate(json.loads(data))
            if last.decided:
                return last
    if last is None:
        raise ApiError(response.status, "the event stream ended without an approval")
    return last


async def _data_of(lines: Any) -> AsyncIterator[str]:
    """Each event's data (its `data:` lines joined), as the stream delivers it; comment
    lines (`:`) and other fields are skipped."""
    data: list[str] = []
    async for raw in lines:
        line = raw.decode().rstrip("\r\n")
        if not line:
            if data:
                yield "\n".join(data)
            data = []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
