"""Webhooks (decision callbacks) from a receiver's side: the client's verification helper
accepts what Signoff signs and refuses forgeries and replays, and each delivery's outcome is
in the API's audit trail (the delivery history)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from collections.abc import Awaitable
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from support.api_support import LOOPBACK
from support.api_support import ApiServers
from support.helpers import AUTH
from support.helpers import Api
from support.helpers import eventually
from support.helpers import free_port

from bot.callbacks import CallbackNotifier
from bot.callbacks import sign
from bot.tasks import Background
from runtime import Runtime
from runtime.deliveries import Deliveries
from signoff.webhooks import BadSignature
from signoff.webhooks import verified
from signoff.webhooks import verify
from store import Store

SECRET = "callback-secret"
MakeApi = Callable[..., Awaitable[Api]]


def test_what_signoff_signs_verifies_and_what_it_does_not_is_refused() -> None:
    body = b'{"id": "a1", "tool": "wire", "args": {}, "policy": "default", "state": "approved",'
    body += b' "created_at": "2026-12-01T00:00:00Z"}'
    now = str(int(time.time()))
    headers = {"X-Signoff-Timestamp": now, "X-Signoff-Signature": sign(SECRET, now, body)}
    assert verified(SECRET, headers, body).state == "approved"
    with pytest.raises(BadSignature, match="does not match"):
        verified(SECRET, headers, body.replace(b"approved", b"declined"))
    with pytest.raises(BadSignature, match="does not match"):
        verified("another-secret", headers, body)
    with pytest.raises(BadSignature, match="no X-Signoff-Timestamp"):
        verified(SECRET, {}, body)
    old = str(int(time.time()) - 3600)
    with pytest.raises(BadSignature, match="older than 300 s"):
        verify(SECRET, timestamp=old, signature_header=sign(SECRET, old, body), body=body)
    with pytest.raises(BadSignature, match="not Unix seconds"):
        verify(SECRET, timestamp="soon", signature_header="v1=00", body=body)


@pytest.fixture
async def make_api(make_runtime: Callable[..., Runtime], store: Store) -> AsyncIterator[MakeApi]:
    servers = ApiServers(make_runtime, store, callbacks=LOOPBACK)
    yield servers.start
    await servers.close()


@pytest.fixture
async def receiver() -> AsyncIterator[tuple[str, list[object]]]:
    """A receiver that checks every delivery with the client's helper (401 if it fails)."""
    got: list[object] = []

    async def handle(request: web.Request) -> web.Response:
        try:
            got.append(verified(SECRET, dict(request.headers), await request.read()))
        except BadSignature:
            return web.Response(status=401)
        return web.Response(status=204)

    app = web.Application()
    app.router.add_post("/hook", handle)
    server = TestServer(app)
    await server.start_server()
    yield str(server.make_url("/hook")), got
    await server.close()


async def test_a_delivery_verifies_and_its_history_is_in_the_audit(
    make_api: MakeApi, store: Store, receiver: tuple[str, list[object]]
) -> None:
    url, got = receiver
    background = Background()
    notifier = CallbackNotifier(Deliveries(store), SECRET, background, policy=LOOPBACK)
    api = await make_api(background, notifier=notifier)
    body = {"tool": "wire", "args": {"cents": 5}, "callback_url": url, "approval_id": "w1"}
    assert (await api.client.post("/v1/approvals", json=body, headers=AUTH)).status == 201
    await api.rt.decide("w1", "declined", by="U0BOSS", reason="no")
    await eventually(lambda: _events(api, "callback_delivered"))
    [approval] = got
    assert (approval.id, approval.state, approval.reason) == ("w1", "declined", "no")  # type: ignore[attr-defined]
    [event] = await _events(api, "callback_delivered")
    assert event["detail"] == {"url": url, "state": "declined", "attempts": 1}


async def test_a_delivery_the_receiver_refuses_is_a_failure_in_the_history(
    make_api: MakeApi, store: Store, receiver: tuple[str, list[object]]
) -> None:
    url, got = receiver
    background = Background()
    notifier = CallbackNotifier(
        Deliveries(store),
        "the-wrong-secret",
        background,
        policy=LOOPBACK,
        attempts=2,
        first_delay=0.01,
    )
    api = await make_api(background, notifier=notifier)
    body = {"tool": "wire", "args": {"cents": 5}, "callback_url": url, "approval_id": "w1"}
    assert (await api.client.post("/v1/approvals", json=body, headers=AUTH)).status == 201
    await api.rt.decide("w1", "approved", by="U0BOSS")
    [event] = await eventually(lambda: _events(api, "callback_failed"))
    assert got == []
    assert event["detail"]["attempts"] == 2
    assert event["detail"]["last"] == "HTTP 401"


async def _events(api: Api, action: str) -> list[dict[str, object]]:
    response = await api.client.get("/v1/audit?approval_id=w1", headers=AUTH)
    return [e for e in (await response.json())["events"] if e["action"] == action]


async def test_every_attempt_is_in_the_delivery_history_until_the_receiver_takes_it(
    make_api: MakeApi, store: Store
) -> None:
    """A receiver that fails twice (500, then 503), then takes the delivery once it verifies
    its signature with the client's helper: three attempts listed, each with its status and,
    but for the last, when it was to be tried again."""
    got: list[object] = []

    async def handle(request: web.Request) -> web.Response:
        try:
            approval = verified(SECRET, dict(request.headers), await request.read())
        except BadSignature:
            return web.Response(status=401)
        got.append(approval)
        return web.Response(status=[500, 503, 204][min(len(got), 3) - 1])

    app = web.Application()
    app.router.add_post("/hook", handle)
    server = TestServer(app)
    await server.start_server()
    url = str(server.make_url("/hook"))
    try:
        background = Background()
        notifier = CallbackNotifier(
            Deliveries(store), SECRET, background, policy=LOOPBACK, first_delay=0.05
        )
        api = await make_api(background, notifier=notifier)
        body = {"tool": "wire", "args": {"cents": 5}, "callback_url": url, "approval_id": "w1"}
        assert (await api.client.post("/v1/approvals", json=body, headers=AUTH)).status == 201
        before = await _deliveries(api)
        await api.rt.decide("w1", "approved", by="U0BOSS")
        await eventually(lambda: _events(api, "callback_delivered"))
        listed = await _deliveries(api)
    finally:
        await server.close()
    assert before == []
    assert len(got) == 3
    assert all(a.state == "approved" for a in got)  # type: ignore[attr-defined]
    assert [(d["attempt"], d["status_code"], d["delivered"]) for d in listed] == [
        (1, 500, False),
        (2, 503, False),
        (3, 204, True),
    ]
    assert [d["error"] for d in listed] == ["HTTP 500", "HTTP 503", None]
    assert {d["url"] for d in listed} == {url}
    first, second, third = (
        {k: datetime.fromisoformat(d[k]) if d[k] else None for k in ("at", "next_attempt_at")}
        for d in listed
    )
    assert first["next_attempt_at"] is not None
    assert second["next_attempt_at"] is not None
    assert first["at"] < first["next_attempt_at"] <= second["at"]  # type: ignore[operator]
    assert second["at"] < second["next_attempt_at"] <= third["at"]  # type: ignore[operator]
    assert third["next_attempt_at"] is None
    missing = await api.client.get("/v1/approvals/nope/deliveries", headers=AUTH)
    assert missing.status == 404


async def test_a_delivery_out_of_attempts_lists_the_error_and_no_next_attempt(
    make_api: MakeApi, store: Store
) -> None:
    background = Background()
    notifier = CallbackNotifier(
        Deliveries(store),
        SECRET,
        background,
        policy=LOOPBACK,
        attempts=2,
        first_delay=0.01,
        timeout=2,
    )
    api = await make_api(background, notifier=notifier)
    url = f"http://127.0.0.1:{free_port()}/hook"  # nobody listens
    body = {"tool": "wire", "args": {}, "callback_url": url, "approval_id": "w1"}
    assert (await api.client.post("/v1/approvals", json=body, headers=AUTH)).status == 201
    await api.rt.decide("w1", "declined", by="U0BOSS", reason="no")
    await eventually(lambda: _events(api, "callback_failed"))
    listed = await _deliveries(api)
    assert [(d["attempt"], d["status_code"], d["delivered"]) for d in listed] == [
        (1, None, False),
        (2, None, False),
    ]
    assert all("Connect" in d["error"] for d in listed), listed
    assert listed[0]["next_attempt_at"] is not None
    assert listed[1]["next_attempt_at"] is None


async def _deliveries(api: Api) -> list[dict[str, Any]]:
    response = await api.client.get("/v1/approvals/w1/deliveries", headers=AUTH)
    assert response.status == 200
    listed: list[dict[str, Any]] = (await response.json())["deliveries"]
    return listed
