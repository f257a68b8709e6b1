"""`GET /v1/approvals/{id}/events` over real HTTP: a server-sent stream that sends the
approval at once and again when its decision lands, then ends (or ends with it pending at
its timeout); the client's `wait(stream=True)` listens on it. Bad input is a JSON 400/404."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from aiohttp import ClientResponse
from support.adapter_support import client_of
from support.helpers import AUTH
from support.helpers import Api

from .test_api_wait import ask


async def events(response: ClientResponse) -> list[dict[str, Any]]:
    """Every event of the stream, until it ends (names checked, comments skipped)."""
    got: list[dict[str, Any]] = []
    name, data = None, []
    async for raw in response.content:
        line = raw.decode().rstrip("\n")
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            data.append(line[6:])
        elif not line and data:
            assert name == "approval"
            got.append(json.loads("\n".join(data)))
            name, data = None, []
    return got


async def test_the_stream_sends_the_approval_now_and_once_decided_then_ends(api: Api) -> None:
    await ask(api)
    response = await api.client.get("/v1/approvals/a1/events?timeout=30", headers=AUTH)
    assert response.status == 200
    assert response.content_type == "text/event-stream"
    first = json.loads((await response.content.readuntil(b"\n\n")).split(b"data: ", 1)[1])
    assert first["state"] == "pending"
    decided_at = time.monotonic()
    await api.rt.decide("a1", "declined", by="U0BOSS", reason="no")
    [decided] = await asyncio.wait_for(events(response), 5)
    assert time.monotonic() - decided_at < 1.0  # woken, not left to the timeout
    assert (decided["state"], decided["decided_by"], decided["reason"]) == (
        "declined",
        "U0BOSS",
        "no",
    )


async def test_still_pending_at_its_timeout_the_stream_ends_with_one_event(api: Api) -> None:
    await ask(api)
    started = time.monotonic()
    response = await api.client.get("/v1/approvals/a1/events?timeout=0.5", headers=AUTH)
    [only] = await asyncio.wait_for(events(response), 5)
    assert only["state"] == "pending"
    assert 0.4 < time.monotonic() - started < 3


async def test_a_decided_approval_streams_once_and_ends(api: Api) -> None:
    await ask(api)
    await api.rt.decide("a1", "approved", by="U0BOSS")
    response = await api.client.get("/v1/approvals/a1/events", headers=AUTH)
    [only] = await asyncio.wait_for(events(response), 5)
    assert only["state"] == "approved"


async def test_bad_input_is_json_and_streams_nothing(api: Api) -> None:
    await ask(api)
    for query, status in [("?timeout=0", 400), ("?timeout=3601", 400), ("?since=1", 400)]:
        response = await api.client.get(f"/v1/approvals/a1/events{query}", headers=AUTH)
        assert response.status == status, query
        assert "error" in await response.json()
    missing = await api.client.get("/v1/approvals/nope/events", headers=AUTH)
    assert missing.status == 404
    assert (await api.client.get("/v1/approvals/a1/events")).status == 401


async def test_the_clients_wait_listens_on_the_stream(api: Api) -> None:
    await ask(api)
    async with client_of(api) as signoff:
        pending = await signoff.wait("a1", timeout=0.5, stream=True)
        assert pending.state == "pending"
        waiting = asyncio.create_task(signoff.wait("a1", stream=True))
        await asyncio.sleep(0.3)
        assert not waiting.done()
        await api.rt.decide("a1", "approved", by="U0BOSS")
        decided = await asyncio.wait_for(waiting, 5)
    assert (decided.state, decided.decided_by) == ("approved", "U0BOSS")
