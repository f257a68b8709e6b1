"""Decision callbacks: signed with HMAC, retried until delivered, and re-sent after a restart.

The receivers listen on 127.0.0.1 over http, which the default callback policy refuses: every
API and notifier here lists `http://127.0.0.1` in its allowlist (`LOOPBACK`), as a deployment
that wants local receivers must. test_callback_allowlist.py covers what is refused."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator
from collections.abc import Awaitable
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
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
from runtime import Policies
from runtime import Policy
from runtime import Runtime
from runtime.deliveries import Deliveries
from store import Delivery
from store import Store
from store import open_store

SECRET = "callback-secret"


@dataclass
class Receiver:
    """A local HTTP endpoint that answers 500 to the first `failures` calls, then 200."""

    failures: int = 0
    calls: list[tuple[dict[str, str], bytes, float]] = field(default_factory=list)
    url: str = ""

    async def handle(self, request: web.Request) -> web.Response:
        self.calls.append((dict(request.headers), await request.read(), time.monotonic()))
        if len(self.calls) <= self.failures:
            return web.Response(status=500, text="not now")
        return web.Response(status=204)

    def delivered(self) -> list[dict[str, Any]]:
        return [json.loads(body) for _, body, _ in self.calls[self.failures :]]


@pytest.fixture
async def make_api(
    make_runtime: Callable[..., Runtime], store: Store
) -> AsyncIterator[Callable[..., Awaitable[Api]]]:
    """The API of conftest, with loopback callbacks allowed by an explicit list."""
    servers = ApiServers(make_runtime, store, callbacks=LOOPBACK)
    yield servers.start
    await servers.close()


@pytest.fixture
async def serve_receiver() -> AsyncIterator[Callable[[int], Awaitable[Receiver]]]:
    servers: list[TestServer] = []

    async def serve(failures: int = 0) -> Receiver:
        receiver = Receiver(failures)
        app = web.Application()
        app.router.add_post("/hook", receiver.handle)
        server = TestServer(app)
        await server.start_server()
        servers.append(server)
        receiver.url = str(server.make_url("/hook"))
        return receiver

    yield serve
    for server in servers:
        await server.close()


async def api_with_callbacks(
    make_api: Callable[..., Awaitable[Api]], store: Store, **options: Any
) -> Api:
    background = Background()
    notifier = CallbackNotifier(Deliveries(store), SECRET, background, policy=LOOPBACK, **options)
    return await make_api(background, notifier=notifier)


async def request_approval(api: Api, url: str) -> str:
    body = {"tool": "wire_money", "args": {"cents": 500}, "callback_url": url}
    response = await api.client.post("/v1/approvals", json=body, headers=AUTH)
    assert response.status == 201
    return str((await response.json())["id"])


AskWithCallback = Callable[..., Awaitable[tuple[Receiver, Api, str]]]


@pytest.fixture
def approval_with_callback(
    make_api: Callable[..., Awaitable[Api]],
    store: Store,
    serve_receiver: Callable[[int], Awaitable[Receiver]],
) -> AskWithCallback:
    """Given `failures` and notifier `options`: a receiver failing its first `failures`
    calls, an API calling back, and the id of an approval asked for with that receiver as
    its callback."""

    async def ask(failures: int = 0, **options: Any) -> tuple[Receiver, Api, str]:
        receiver = await serve_receiver(failures)
        api = await api_with_callbacks(make_api, store, **options)
        return receiver, api, await request_approval(api, receiver.url)

    return ask


async def callback_status(store: Store, approval_id: str) -> Delivery | None:
    return (await store.get_approval(approval_id)).callback_status


async def test_decision_reaches_the_callback_signed(
    approval_with_callback: AskWithCallback, store: Store
) -> None:
    receiver, api, approval_id = await approval_with_callback()
    assert await callback_status(store, approval_id) == Delivery.PENDING
    await api.rt.decide(approval_id, "approved", by="U0BOSS")
    await eventually(lambda: _delivered(store, approval_id))
    [(headers, body, _)] = receiver.calls
    timestamp = headers["X-Signoff-Timestamp"]
    assert abs(int(timestamp) - time.time()) < 60
    assert headers["X-Signoff-Signature"] == sign(SECRET, timestamp, body)
    assert headers["X-Signoff-Signature"] != sign("another-secret", timestamp, body)
    payload = json.loads(body)
    assert payload["id"] == approval_id
    assert payload["state"] == "approved"
    assert payload["decided_by"] == "U0BOSS"


async def test_declined_decision_is_called_back_with_the_reason(
    approval_with_callback: AskWithCallback, store: Store
) -> None:
    receiver, api, approval_id = await approval_with_callback()
    await api.rt.decide(approval_id, "declined", by="U0BOSS", reason="not this month")
    await eventually(lambda: _delivered(store, approval_id))
    [payload] = receiver.delivered()
    assert payload["state"] == "declined"
    assert payload["reason"] == "not this month"


async def test_failing_receiver_is_retried_until_it_succeeds(
    approval_with_callback: AskWithCallback, store: Store
) -> None:
    receiver, api, approval_id = await approval_with_callback(2, attempts=5, first_delay=0.05)
    await api.rt.decide(approval_id, "approved", by="U0BOSS")
    await eventually(lambda: _delivered(store, approval_id))
    assert len(receiver.calls) == 3
    gaps = [b[2] - a[2] for a, b in zip(receiver.calls, receiver.calls[1:], strict=False)]
    assert gaps[0] >= 0.04
    assert gaps[1] >= 0.08  # the delay doubles
    for headers, body, _ in receiver.calls:
        assert headers["X-Signoff-Signature"] == sign(SECRET, headers["X-Signoff-Timestamp"], body)


async def test_receiver_that_never_succeeds_ends_failed_after_attempts(
    approval_with_callback: AskWithCallback, store: Store
) -> None:
    receiver, api, approval_id = await approval_with_callback(1_000, attempts=3, first_delay=0.02)
    await api.rt.decide(approval_id, "approved", by="U0BOSS")

    async def failed() -> bool:
        return await callback_status(store, approval_id) == Delivery.FAILED

    await eventually(failed)
    assert len(receiver.calls) == 3


async def test_unreachable_receiver_ends_failed(
    make_api: Callable[..., Awaitable[Api]], store: Store
) -> None:
    api = await api_with_callbacks(make_api, store, attempts=2, first_delay=0.01)
    approval_id = await request_approval(api, f"http://127.0.0.1:{free_port()}/hook")
    await api.rt.decide(approval_id, "approved", by="U0BOSS")

    async def failed() -> bool:
        return await callback_status(store, approval_id) == Delivery.FAILED

    await eventually(failed)


async def test_a_short_lived_process_tries_once_and_leaves_the_rest_to_the_server(
    db_url: str, store: Store, serve_receiver: Any
) -> None:
    rt = Runtime(store, [], worker_id="cli")
    approval, _ = await rt.request_approval(
        "wire_money", {"cents": 1}, callback_url=f"http://127.0.0.1:{free_port()}/hook"
    )
    decided = await rt.decide(approval.id, "approved", by="U0BOSS")
    cli = CallbackNotifier(
        Deliveries(store), SECRET, Background(), attempts=1, hand_over=True, policy=LOOPBACK
    )

    started = time.monotonic()
    assert await cli.deliver(decided) is False
    assert time.monotonic() - started < 5
    assert await callback_status(store, approval.id) == Delivery.PENDING

    server = CallbackNotifier(
        Deliveries(store), SECRET, Background(), first_delay=0.01, policy=LOOPBACK
    )
    assert await server.redeliver() == 1  # what `serve` runs every 30 s


async def test_expiry_by_the_scheduler_is_called_back(
    make_api: Callable[..., Awaitable[Api]], store: Store, serve_receiver: Any
) -> None:
    receiver = await serve_receiver(0)
    background = Background()
    notifier = CallbackNotifier(Deliveries(store), SECRET, background, policy=LOOPBACK)
    api = await make_api(
        background, notifier=notifier, policies=Policies(default=Policy(timeout=0.3))
    )
    scheduler = api.rt.scheduler
    await scheduler.start()
    try:
        approval_id = await request_approval(api, receiver.url)
        await eventually(lambda: _delivered(store, approval_id))
    finally:
        await scheduler.stop()
    [payload] = receiver.delivered()
    assert payload["state"] == "declined"
    assert payload["reason"] == "expired"


async def test_approval_without_callback_has_no_callback_status(api: Api) -> None:
    response = await api.client.post("/v1/approvals", json={"tool": "x"}, headers=AUTH)
    approval_id = (await response.json())["id"]
    await api.rt.decide(approval_id, "approved", by="U0BOSS")
    assert await callback_status(api.store, approval_id) is None


async def test_redeliver_sends_callbacks_a_previous_process_left_pending(
    db_url: str, store: Store, serve_receiver: Any
) -> None:
    receiver = await serve_receiver(0)
    first = Runtime(store, [], worker_id="first")  # no callback notifier: nothing is sent
    left, _ = await first.request_approval("wire_money", {"cents": 1}, callback_url=receiver.url)
    await first.decide(left.id, "approved", by="U0BOSS")
    still_pending, _ = await first.request_approval("x", {}, callback_url=receiver.url)
    assert receiver.calls == []

    second = await open_store(db_url)
    try:
        notifier = CallbackNotifier(
            Deliveries(second), SECRET, Background(), first_delay=0.01, policy=LOOPBACK
        )
        assert await notifier.redeliver() == 1
        [payload] = receiver.delivered()
        assert payload["id"] == left.id
        assert payload["state"] == "approved"
        assert await callback_status(second, left.id) == Delivery.DELIVERED
        assert await callback_status(second, still_pending.id) == Delivery.PENDING
        assert await notifier.redeliver() == 0
        assert len(receiver.calls) == 1
    finally:
        await second.close()


async def test_delivered_and_failed_callbacks_leave_one_line_each(
    make_api: Callable[..., Awaitable[Api]],
    store: Store,
    serve_receiver: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="signoff")
    good, bad = await serve_receiver(0), await serve_receiver(1_000)
    api = await api_with_callbacks(make_api, store, attempts=3, first_delay=0.01)
    delivered = await request_approval(api, good.url)
    failed = await request_approval(api, bad.url)
    await api.rt.decide(delivered, "approved", by="U0BOSS")
    await api.rt.decide(failed, "declined", by="U0BOSS", reason="no")
    await eventually(lambda: _delivered(store, delivered))

    async def gave_up() -> bool:
        return await callback_status(store, failed) == Delivery.FAILED

    await eventually(gave_up)
    lines = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "signoff.callbacks"]
    assert lines == [
        (
            logging.INFO,
            f"callback for approval {delivered} (approved) delivered to {good.url} (attempt 1)",
        ),
        (
            logging.WARNING,
            f"callback for approval {failed} to {bad.url} failed 3 times "
            "(last: HTTP 500); signoff serve sends it again later",
        ),
    ]


async def _delivered(store: Store, approval_id: str) -> bool:
    return await callback_status(store, approval_id) == Delivery.DELIVERED
