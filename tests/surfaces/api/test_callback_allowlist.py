"""Where callbacks may go: an allowed host gets its decision, signed; loopback, private,
link-local and metadata addresses, and host names that resolve to them, are refused when the
callback is requested (400 naming the setting, nothing created) and again when it is sent
(nothing reaches the address). DNS is a fake table: no test resolves a real name."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from collections.abc import Awaitable
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from support.api_support import ApiServers
from support.api_support import FakeDns
from support.api_support import allowing
from support.helpers import AUTH
from support.helpers import Api
from support.helpers import eventually

from bot.callback_policy import CallbackPolicy
from bot.callback_policy import CallbackRefused
from bot.callback_policy import parse_allowed
from bot.callbacks import CallbackNotifier
from bot.callbacks import sign
from bot.tasks import Background
from runtime import Runtime
from runtime.deliveries import Deliveries
from store import Delivery
from store import Store

SECRET = "allowlist-callback-secret"
SETTING = "callback_allowed_hosts (SIGNOFF_CALLBACK_ALLOWED_HOSTS)"
PUBLIC = "93.184.215.14"


class Receiver:
    """A local endpoint on 127.0.0.1 recording what reaches it."""

    def __init__(self) -> None:
        self.calls: list[tuple[dict[str, str], bytes]] = []
        self.port = 0
        self.answer = web.Response(status=204)
        self.delay = 0.0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.calls.append((dict(request.headers), await request.read()))
        await asyncio.sleep(self.delay)
        return self.answer


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    found = Receiver()
    app = web.Application()
    app.router.add_post("/hook", found.handle)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    found.port = server.port or 0
    yield found
    await server.close()


@pytest.fixture
def dns() -> FakeDns:
    return FakeDns()


@pytest.fixture
async def make_api(
    make_runtime: Callable[..., Runtime], store: Store
) -> AsyncIterator[Callable[..., Awaitable[Api]]]:
    servers = ApiServers(make_runtime, store)
    yield servers.start
    await servers.close()


async def with_policy(
    make_api: Callable[..., Awaitable[Api]], store: Store, policy: CallbackPolicy
) -> Api:
    """An API and a callback sender that share one policy, as `serve` configures them."""
    background = Background()
    notifier = CallbackNotifier(Deliveries(store), SECRET, background, policy=policy, attempts=1)
    return await make_api(background, notifier=notifier, callbacks=policy)


async def ask(api: Api, url: str) -> tuple[int, dict[str, Any]]:
    body = {"tool": "wire_money", "args": {"cents": 500}, "callback_url": url}
    response = await api.client.post("/v1/approvals", json=body, headers=AUTH)
    return response.status, await response.json()


async def status_of(store: Store, approval_id: str) -> Delivery | None:
    return (await store.get_approval(approval_id)).callback_status


# allowed


async def test_an_allowed_host_gets_the_decision_signed(
    make_api: Callable[..., Awaitable[Api]], store: Store, receiver: Receiver, dns: FakeDns
) -> None:
    dns.set("billing.hooks.test", ["127.0.0.1"])
    api = await with_policy(make_api, store, allowing(["http://.hooks.test"], dns))
    status, approval = await ask(api, f"http://billing.hooks.test:{receiver.port}/hook")
    assert status == 201, approval
    await api.rt.decide(approval["id"], "approved", by="U0BOSS")

    async def delivered() -> bool:
        return await status_of(store, approval["id"]) == Delivery.DELIVERED

    await eventually(delivered)
    [(headers, body)] = receiver.calls
    assert headers["Host"] == f"billing.hooks.test:{receiver.port}"
    assert headers["X-Signoff-Signature"] == sign(SECRET, headers["X-Signoff-Timestamp"], body)
    assert abs(int(headers["X-Signoff-Timestamp"]) - time.time()) < 60
    assert (json.loads(body)["id"], json.loads(body)["state"]) == (approval["id"], "approved")
    assert dns.asked.count("billing.hooks.test") >= 2  # at the request and at the send


async def test_a_public_https_host_needs_no_list(dns: FakeDns) -> None:
    dns.set("hooks.example.com", [PUBLIC, "2606:2800:21f:cb07:6820:80da:af6b:8b2c"])
    policy = allowing([], dns)
    await policy.check("https://hooks.example.com/signoff")
    await policy.check(f"https://{PUBLIC}:8443/signoff")


# refused when asked


NO_LIST = [
    ("https://127.0.0.1/hook", "127.0.0.1 is not a public address"),
    ("https://10.1.2.3/hook", "10.1.2.3 is not a public address"),
    ("https://192.168.0.10/hook", "not a public address"),
    ("https://[::1]/hook", "not a public address"),
    ("https://[::ffff:127.0.0.1]/hook", "not a public address"),
    ("https://[64:ff9b::a01:203]/hook", "not a public address"),  # NAT64 of 10.1.2.3
    ("https://0.0.0.0/hook", "not a public address"),
    ("https://169.254.169.254/latest/meta-data/", "metadata"),
    ("https://[fd00:ec2::254]/latest/meta-data/", "metadata"),
    ("https://internal.example/hook", "internal.example resolves to 10.0.0.7"),
    ("https://localhost/hook", "localhost resolves to 127.0.0.1"),
    ("https://mixed.example/hook", "mixed.example resolves to 172.16.0.1"),
    ("https://imds.example/hook", "imds.example resolves to 169.254.169.254"),
    ("https://nowhere.example/hook", "does not resolve"),
    (f"http://{PUBLIC}/hook", "must use https"),
]


@pytest.mark.parametrize(("url", "reason"), NO_LIST)
async def test_without_a_list_internal_addresses_are_refused_when_asked(
    make_api: Callable[..., Awaitable[Api]], store: Store, dns: FakeDns, url: str, reason: str
) -> None:
    dns.set("internal.example", ["10.0.0.7"])
    dns.set("localhost", ["127.0.0.1"])
    dns.set("mixed.example", [PUBLIC, "172.16.0.1"])
    dns.set("imds.example", ["169.254.169.254"])
    api = await with_policy(make_api, store, allowing([], dns))
    status, answer = await ask(api, url)
    assert status == 400
    assert answer["error"].startswith("callback_url: ")
    assert reason in answer["error"]
    assert SETTING in answer["error"]
    assert await api.counts() == (0, 0)


WITH_LIST = [
    ("https://evil.example/hook", "host evil.example is not in"),
    ("https://example.com/hook", "host example.com is not in"),  # the suffix needs a subdomain
    ("https://evilexample.com/hook", "is not in"),
    ("https://hooks.example.com.evil.test/hook", "is not in"),
    ("http://a.example.com/hook", "http to a.example.com is not allowed"),
    ("https://169.254.169.254/latest/meta-data/", "never allowed"),  # even though listed
    ("https://rebound.example.com/hook", "metadata"),
]


@pytest.mark.parametrize(("url", "reason"), WITH_LIST)
async def test_with_a_list_only_listed_hosts_and_never_metadata(
    make_api: Callable[..., Awaitable[Api]], store: Store, dns: FakeDns, url: str, reason: str
) -> None:
    dns.set("rebound.example.com", ["169.254.169.254"])
    policy = allowing([".example.com", "169.254.169.254", "http://127.0.0.1"], dns)
    api = await with_policy(make_api, store, policy)
    status, answer = await ask(api, url)
    assert status == 400
    assert reason in answer["error"]
    assert SETTING in answer["error"]
    assert await api.counts() == (0, 0)


async def test_a_listed_internal_host_is_allowed(dns: FakeDns) -> None:
    dns.set("hooks.corp.internal", ["10.0.0.5"])
    policy = allowing(["hooks.corp.internal", "http://127.0.0.1"], dns)
    await policy.check("https://hooks.corp.internal/signoff")
    await policy.check("http://127.0.0.1:8080/hook")
    with pytest.raises(CallbackRefused, match=r"http to hooks\.corp\.internal"):
        await policy.check("http://hooks.corp.internal/signoff")


# refused when sent


async def sender_refuses(
    store: Store, receiver: Receiver, url: str, policy: CallbackPolicy, caplog: Any
) -> str:
    """A decided approval whose URL the runtime stored unchecked (an older version, a
    changed list, a changed DNS answer): the sender refuses it; nothing reaches the
    receiver. Returns the reason logged."""
    rt = Runtime(store, [], worker_id="sender")
    approval, _ = await rt.request_approval("wire_money", {"cents": 1}, callback_url=url)
    decided = await rt.decide(approval.id, "approved", by="U0BOSS")
    notifier = CallbackNotifier(
        Deliveries(store), SECRET, Background(), policy=policy, first_delay=0.01
    )
    with caplog.at_level(logging.WARNING, logger="signoff.callbacks"):
        assert await notifier.deliver(decided) is False
    assert receiver.calls == []
    assert await status_of(store, approval.id) == Delivery.FAILED
    [line] = [r.getMessage() for r in caplog.records if r.name == "signoff.callbacks"]
    assert line.startswith(f"callback for approval {approval.id} refused, not sent: ")
    return line


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("https://127.0.0.1:{port}/hook", "127.0.0.1 is not a public address"),
        ("http://127.0.0.1:{port}/hook", "must use https"),
        ("https://10.1.2.3:{port}/hook", "10.1.2.3 is not a public address"),
        ("https://169.254.169.254/latest/meta-data/", "metadata"),
        ("https://sneaky.example:{port}/hook", "sneaky.example resolves to 127.0.0.1"),
    ],
)
async def test_without_a_list_internal_addresses_are_refused_when_sent(
    store: Store,
    receiver: Receiver,
    dns: FakeDns,
    caplog: pytest.LogCaptureFixture,
    url: str,
    reason: str,
) -> None:
    dns.set("sneaky.example", ["127.0.0.1"])
    line = await sender_refuses(
        store, receiver, url.format(port=receiver.port), allowing([], dns), caplog
    )
    assert reason in line


async def test_a_name_that_changes_its_answer_after_the_request_is_refused_when_sent(
    make_api: Callable[..., Awaitable[Api]],
    store: Store,
    receiver: Receiver,
    dns: FakeDns,
    caplog: pytest.LogCaptureFixture,
) -> None:
    dns.set("rebind.example", [PUBLIC], ["127.0.0.1"])  # public when asked, loopback after
    api = await with_policy(make_api, store, allowing([], dns))
    status, approval = await ask(api, f"https://rebind.example:{receiver.port}/hook")
    assert status == 201
    with caplog.at_level(logging.WARNING, logger="signoff.callbacks"):
        await api.rt.decide(approval["id"], "approved", by="U0BOSS")

        async def failed() -> bool:
            return await status_of(store, approval["id"]) == Delivery.FAILED

        await eventually(failed)
    assert receiver.calls == []
    assert any("rebind.example resolves to 127.0.0.1" in m for m in caplog.messages)


async def test_the_connection_uses_only_addresses_the_policy_checked(
    store: Store, receiver: Receiver, dns: FakeDns, caplog: pytest.LogCaptureFixture
) -> None:
    """Checked once before sending, the name answers otherwise when the connection resolves
    it: the connection resolves through the policy too, so the new answer is refused."""
    dns.set("billing.hooks.test", ["127.0.0.1"], ["169.254.169.254"])
    policy = allowing(["http://.hooks.test"], dns)
    url = f"http://billing.hooks.test:{receiver.port}/hook"
    line = await sender_refuses(store, receiver, url, policy, caplog)
    assert "billing.hooks.test resolves to 169.254.169.254" in line


async def test_a_host_no_longer_listed_is_refused_when_sent(
    store: Store, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"http://127.0.0.1:{receiver.port}/hook"
    line = await sender_refuses(store, receiver, url, allowing(["hooks.example.com"]), caplog)
    assert "host 127.0.0.1 is not in" in line


async def test_a_short_lived_process_leaves_a_refused_callback_to_the_server(
    store: Store, receiver: Receiver
) -> None:
    rt = Runtime(store, [], worker_id="cli")
    url = f"https://127.0.0.1:{receiver.port}/hook"
    approval, _ = await rt.request_approval("wire_money", {}, callback_url=url)
    decided = await rt.decide(approval.id, "approved", by="U0BOSS")
    cli = CallbackNotifier(Deliveries(store), SECRET, Background(), attempts=1, hand_over=True)
    assert await cli.deliver(decided) is False
    assert await status_of(store, approval.id) == Delivery.PENDING
    assert receiver.calls == []


# redirects and timeouts


async def test_a_redirect_is_not_followed(store: Store, receiver: Receiver) -> None:
    receiver.answer = web.Response(
        status=307, headers={"Location": "https://169.254.169.254/latest/meta-data/"}
    )
    rt = Runtime(store, [], worker_id="sender")
    url = f"http://127.0.0.1:{receiver.port}/hook"
    approval, _ = await rt.request_approval("wire_money", {}, callback_url=url)
    decided = await rt.decide(approval.id, "approved", by="U0BOSS")
    policy = allowing(["http://127.0.0.1"])
    notifier = CallbackNotifier(Deliveries(store), SECRET, Background(), policy=policy, attempts=1)
    assert await notifier.deliver(decided) is False
    assert len(receiver.calls) == 1
    assert await status_of(store, approval.id) == Delivery.FAILED


async def test_a_receiver_that_never_answers_times_out(
    store: Store, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    receiver.delay = 30
    rt = Runtime(store, [], worker_id="sender")
    url = f"http://127.0.0.1:{receiver.port}/hook"
    approval, _ = await rt.request_approval("wire_money", {}, callback_url=url)
    decided = await rt.decide(approval.id, "approved", by="U0BOSS")
    policy = allowing(["http://127.0.0.1"])
    notifier = CallbackNotifier(
        Deliveries(store), SECRET, Background(), policy=policy, attempts=1, timeout=0.3
    )
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="signoff.callbacks"):
        assert await notifier.deliver(decided) is False
    assert time.monotonic() - started < 3
    assert any("TimeoutError" in m for m in caplog.messages)


# the list itself


@pytest.mark.parametrize(
    "entry", ["ftp://hooks.example.com", "*.example.com", "hooks.example.com/path", "", "a b"]
)
def test_a_bad_list_entry_is_refused(entry: str) -> None:
    with pytest.raises(ValueError, match=r"is not a host name|only an http:// prefix"):
        parse_allowed([entry])


def test_list_entries() -> None:
    exact, suffix, http, v6 = parse_allowed(
        ["Hooks.Example.com", ".example.org", "http://127.0.0.1", "[::1]"]
    )
    assert (exact.host, exact.http, exact.matches("hooks.example.com")) == (
        "hooks.example.com",
        False,
        True,
    )
    assert suffix.matches("a.b.example.org")
    assert not suffix.matches("example.org")
    assert not suffix.matches("evilexample.org")
    assert (http.host, http.http) == ("127.0.0.1", True)
    assert v6.matches("::1")
