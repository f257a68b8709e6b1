"""Webhooks (decision callbacks) from a receiver's side: the client's verification helper
accepts what Signoff signs and refuses forgeries and replays, and each delivery's outcome is
in the API's audit trail (the delivery history)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bot.callbacks import CallbackNotifier, sign
from bot.tasks import Background
from runtime import Runtime
from signoff.webhooks import BadSignature, verified, verify
from store import Store

from .api_support import LOOPBACK, ApiServers
from .helpers import AUTH, Api, eventually

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
    notifier = CallbackNotifier(store, SECRET, background, policy=LOOPBACK)
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
        store, "the-wrong-secret", background, policy=LOOPBACK, attempts=2, first_delay=0.01
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
