"""A local fake Slack on 127.0.0.1, for the tests and for the local dev mode (the HTTP face of
`bot.dev.slack.fake_web`, with its control routes and its command line).

It answers the Web API methods Signoff uses (see `bot.dev.slack.fake_web`), checks tokens,
records every call with the HTTP status it got, serves Socket Mode (`bot.dev.slack.fake_socket`),
and can misbehave on command - 429 with `Retry-After`, 500, no answer at all, a post that hangs
and lands late (after its caller gave up, or died), a post that lands but whose answer is
lost, or one answered `ok` without a usable ts - because those are the cases the bot must
survive and real Slack will not produce on demand. Another process drives it through the
`/_fake/` routes, or runs it with `python -m bot.dev.slack --port 0 --ready-file PATH`.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections import deque
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import replace
from types import TracebackType
from typing import Any

from aiohttp import web

from bot.dev.slack.fake_socket import SocketHub
from bot.dev.slack.fake_socket import SocketModeError
from bot.dev.slack.fake_web import APP_ID
from bot.dev.slack.fake_web import Args
from bot.dev.slack.fake_web import Ephemeral
from bot.dev.slack.fake_web import Message
from bot.dev.slack.fake_web import OpenedView
from bot.dev.slack.fake_web import SlackError
from bot.dev.slack.fake_web import Workspace

APP_TOKEN_METHODS = frozenset({"apps.connections.open"})
HTTP_ERRORS = {429: "ratelimited", 503: "service_unavailable"}
TIERS = {1: 1, 2: 20, 3: 50, 4: 100}
"""Calls a minute each rate-limit tier allows (docs.slack.dev/apis/web-api/rate-limits)."""
METHOD_TIERS = {
    "auth.test": 4,
    "chat.delete": 3,
    "chat.update": 3,
    "chat.postEphemeral": 4,
    "conversations.history": 3,
    "conversations.info": 3,
    "conversations.list": 2,
    "conversations.replies": 3,
    "usergroups.users.list": 2,
    "users.info": 4,
    "views.open": 4,
    "views.update": 4,
    "views.publish": 4,
}
POSTS_PER_SECOND = 1.0
"""`chat.postMessage` is special: about one a second per channel, short bursts allowed."""


@dataclass(frozen=True)
class Call:
    """One Web API call as the fake saw it; `status` 0 means no answer was sent (yet)."""

    method: str
    args: dict[str, Any]
    at: float
    status: int


@dataclass(frozen=True)
class _Failure:
    status: int
    retry_after: int


@dataclass(frozen=True)
class _Hang:
    seconds: float
    lands: bool
    """Whether the call is carried out after the wait (a post that lands late) or lost."""


TSLESS_SHAPES = ("missing", "empty", "null")
"""How an `ok` post answer can lack its ts: no `ts` key, `"ts": ""`, or `"ts": null`."""


@dataclass(frozen=True)
class _Tsless:
    ts: str
    """One of TSLESS_SHAPES."""
    channel: bool
    """Whether the answer still names the channel."""


class RateLimits:
    """Slack's per-method limits as token buckets (per channel for `chat.postMessage`),
    `scale` times faster than Slack's, so a test can meet them in seconds."""

    def __init__(self, scale: float = 1.0, *, burst: float = 5.0) -> None:
        self.scale = scale
        self.burst = burst
        self._buckets: dict[tuple[str, str], tuple[float, float]] = {}

    def retry_after(self, method: str, args: Args) -> int | None:
        """None when the call may go; else the whole seconds to wait (`Retry-After`)."""
        if method == "chat.postMessage":
            key, rate = (method, str(args.get("channel", ""))), POSTS_PER_SECOND
        elif method in METHOD_TIERS:
            key, rate = (method, ""), TIERS[METHOD_TIERS[method]] / 60.0
        else:
            return None
        rate *= self.scale
        now = time.monotonic()
        tokens, at = self._buckets.get(key, (self.burst, now))
        tokens = min(self.burst, tokens + (now - at) * rate)
        if tokens < 1.0:
            self._buckets[key] = (tokens, now)
            return max(1, math.ceil((1.0 - tokens) / rate))
        self._buckets[key] = (tokens - 1.0, now)
        return None


class FakeSlack:
    """The fake: a Slack workspace over real HTTP, with failure injection and a record."""

    def __init__(
        self,
        *,
        token: str = "xoxb-test",
        app_token: str = "xapp-test",
        channels: Iterable[str] = ("C0APPROVALS", "C0ONCALL"),
        users: Mapping[str, str] | None = None,
        usergroups: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        self.token = token
        self.app_token = app_token
        self.workspace = Workspace(
            channels=channels, users=users or {}, usergroups=usergroups or {}
        )
        self.socket = SocketHub(app_id=APP_ID)
        self.calls: list[Call] = []
        self._failures: deque[_Failure] = deque()
        self._failing_until = 0.0
        self._failing_status = 500
        self._hangs: deque[_Hang] = deque()
        self._post_hangs: deque[_Hang] = deque()
        self._drops = 0
        self._tsless: deque[_Tsless] = deque()
        self.rate_limits: RateLimits | None = None
        self.publish_limits = RateLimits()
        """`views.publish` is always held to Slack's limit (Tier 4, a burst of 5): a Home
        republished after every change is the call a busy bot overruns."""
        self._stopping = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._base_url = ""

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Listen on host:port (0 picks a free port) and return the Web API base URL."""
        self._stopping.clear()
        self._runner = web.AppRunner(self._app(), access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        await web.TCPSite(self._runner, host, port).start()
        bound_host, bound_port = self._runner.addresses[0][:2]
        bound_host = f"[{bound_host}]" if ":" in bound_host else bound_host
        self._base_url = f"http://{bound_host}:{bound_port}/api/"
        return self._base_url

    async def stop(self) -> None:
        """Wake hanging calls, close Socket Mode connections, and stop listening."""
        self._stopping.set()
        await self.socket.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeSlack:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT/api/`: slack_sdk appends the method name to it."""
        if not self._base_url:
            raise RuntimeError("FakeSlack is not started")
        return self._base_url

    # -- what happened -------------------------------------------------------------------------

    @property
    def messages(self) -> dict[str, list[Message]]:
        """Per channel, every message posted (thread replies included), oldest first."""
        return self.workspace.messages

    @property
    def ephemerals(self) -> list[Ephemeral]:
        return self.workspace.ephemerals

    @property
    def views(self) -> list[OpenedView]:
        return self.workspace.views

    @property
    def deleted(self) -> list[Message]:
        """Messages removed with `chat.delete`, in the order they were."""
        return self.workspace.deleted

    def calls_to(self, method: str) -> list[Call]:
        return [call for call in self.calls if call.method == method]

    def message(self, channel: str, ts: str) -> Message:
        """The message at `ts` in `channel`; KeyError when there is none."""
        return self.workspace.message(channel, ts)

    def thread(self, channel: str, ts: str) -> list[Message]:
        return self.workspace.thread(channel, ts)

    # -- misbehaviour on command ---------------------------------------------------------------

    def fail_next(self, n: int, *, status: int = 500, retry_after: int = 1) -> None:
        """The next n Web API calls answer `status` (429s carry `Retry-After: retry_after`)."""
        self._failures.extend(_Failure(status, retry_after) for _ in range(n))

    def fail_for(self, seconds: float, *, status: int = 500) -> None:
        """Every Web API call answers `status` for the next `seconds`."""
        self._failing_until = time.monotonic() + seconds
        self._failing_status = status

    def hang_next(self, n: int, seconds: float = 30.0) -> None:
        """The next n calls answer only after `seconds` (then normally), so clients time out."""
        self._hangs.extend(_Hang(seconds, lands=True) for _ in range(n))

    def hang_posts(self, n: int, seconds: float = 30.0, *, lands: bool = True) -> None:
        """The next n `chat.postMessage` calls hang `seconds`; then the message lands (late,
        after the caller gave up) or, with `lands=False`, is lost."""
        self._post_hangs.extend(_Hang(seconds, lands) for _ in range(n))

    def limit_rates(self, scale: float = 1.0) -> None:
        """Answer 429 with `Retry-After` past each method's tier, `scale` times Slack's rate."""
        self.rate_limits = RateLimits(scale)
        self.publish_limits = RateLimits(scale)

    def set_members(self, channel: str, users: Iterable[str]) -> None:
        """Only these users are in `channel` (`chat.postEphemeral` to others fails)."""
        self.workspace.members[channel] = set(users)

    def drop_after_post(self, n: int) -> None:
        """The next n posts that land answer 500: Slack has the message, the caller no ts."""
        self._drops += n

    def answer_without_ts(self, n: int, *, ts: str = "missing", channel: bool = True) -> None:
        """The next n posts land and answer `ok: true` without a usable ts (`ts`: "missing",
        "empty" or "null", in the answer and its `message`), and without the channel unless
        `channel`: Slack has the message, the caller cannot tell which one it is."""
        if ts not in TSLESS_SHAPES:
            raise ValueError(f"ts: one of {', '.join(TSLESS_SHAPES)}, not {ts!r}")
        self._tsless.extend(_Tsless(ts, channel) for _ in range(n))

    async def send_socket_envelope(
        self, payload: dict[str, Any], *, type: str, ack_within: float = 5.0
    ) -> dict[str, Any]:
        """Deliver a Socket Mode envelope and return the client's ack body."""
        return await self.socket.deliver(payload, type=type, ack_within=ack_within)

    # -- HTTP ----------------------------------------------------------------------------------

    def _app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._web_api)
        app.router.add_get("/socket", self.socket.handle)
        for name in ("calls", "messages", "ephemerals", "views", "deleted"):
            app.router.add_get(f"/_fake/{name}", self._show)
        app.router.add_post("/_fake/fail", self._control_fail)
        app.router.add_post("/_fake/hang", self._control_hang)
        app.router.add_post("/_fake/drop_after_post", self._control_drop)
        app.router.add_post("/_fake/hang_posts", self._control_hang_posts)
        app.router.add_post("/_fake/answer_without_ts", self._control_tsless)
        app.router.add_post("/_fake/rate_limits", self._control_rate_limits)
        app.router.add_post("/_fake/members", self._control_members)
        app.router.add_post("/_fake/socket", self._control_socket)
        return app

    async def _web_api(self, request: web.Request) -> web.Response:
        """One Web API call: record it, misbehave if told to, else check the token and answer."""
        method = request.match_info["method"]
        refused: dict[str, Any] | None
        try:
            args, token = await _read_args(request)
        except SlackError as refusal:
            args, token, refused = {}, None, refusal.body()
        else:
            refused = self._auth_refusal(method, token)
        index = len(self.calls)
        self.calls.append(Call(method, args, time.time(), 0))
        response = await self._answer(method, args, refused)
        self.calls[index] = replace(self.calls[index], status=response.status)
        return response

    async def _answer(
        self, method: str, args: Args, refused: dict[str, Any] | None
    ) -> web.Response:
        failure = self._next_failure()
        if failure is not None:
            return _failure_response(failure)
        if self._hangs:
            await self._sleep(self._hangs.popleft().seconds)
            if self._stopping.is_set():
                return _failure_response(_Failure(503, 0))
        if refused is not None:
            return web.json_response(refused)
        limits = self.publish_limits if method == "views.publish" else self.rate_limits
        waited = limits.retry_after(method, args) if limits else None
        if waited is not None:
            return _failure_response(_Failure(429, waited))
        if method == "chat.postMessage" and self._post_hangs:
            hang = self._post_hangs.popleft()
            await self._sleep(hang.seconds)
            if not hang.lands or self._stopping.is_set():
                return _failure_response(_Failure(503, 0))
        if method == "apps.connections.open":
            return web.json_response({"ok": True, "url": self._socket_url()})
        body = self.workspace.call(method, args)
        if method == "chat.postMessage" and body["ok"] and self._drops:
            self._drops -= 1
            return _failure_response(_Failure(500, 0))
        if method == "chat.postMessage" and body["ok"] and self._tsless:
            body = _without_ts(body, self._tsless.popleft())
        return web.json_response(body)

    def _auth_refusal(self, method: str, token: str | None) -> dict[str, Any] | None:
        """Slack's answer to a missing, wrong, or wrong-kind token; None when it is right."""
        wanted, other = self.token, self.app_token
        if method in APP_TOKEN_METHODS:
            wanted, other = other, wanted
        if not token:
            return {"ok": False, "error": "not_authed"}
        if token == other:
            return {"ok": False, "error": "not_allowed_token_type"}
        if token != wanted:
            return {"ok": False, "error": "invalid_auth"}
        return None

    def _next_failure(self) -> _Failure | None:
        remaining = self._failing_until - time.monotonic()
        if remaining > 0:
            return _Failure(self._failing_status, max(1, math.ceil(remaining)))
        return self._failures.popleft() if self._failures else None

    async def _sleep(self, seconds: float) -> None:
        """Sleep, but not past `stop()`: a hanging call must not hold the server open."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), seconds)

    def _socket_url(self) -> str:
        ws_base = self.base_url.replace("http://", "ws://", 1).removesuffix("/api/")
        return self.socket.issue_url(f"{ws_base}/socket")

    # -- control routes (/_fake/...) -----------------------------------------------------------

    async def _show(self, request: web.Request) -> web.Response:
        name = request.path.rsplit("/", 1)[-1]
        if name == "messages":
            shown: Any = {ch: [asdict(m) for m in msgs] for ch, msgs in self.messages.items()}
        else:
            shown = [asdict(item) for item in getattr(self, name)]
        return web.json_response(shown)

    async def _control_fail(self, request: web.Request) -> web.Response:
        order = await request.json()
        status = int(order.get("status", 500))
        if "seconds" in order:
            self.fail_for(float(order["seconds"]), status=status)
        else:
            self.fail_next(int(order.get("n", 1)), status=status, retry_after=_retry(order))
        return web.json_response({"ok": True})

    async def _control_hang(self, request: web.Request) -> web.Response:
        order = await request.json()
        self.hang_next(int(order.get("n", 1)), float(order.get("seconds", 30.0)))
        return web.json_response({"ok": True})

    async def _control_hang_posts(self, request: web.Request) -> web.Response:
        order = await request.json()
        seconds = float(order.get("seconds", 30.0))
        self.hang_posts(int(order.get("n", 1)), seconds, lands=bool(order.get("lands", True)))
        return web.json_response({"ok": True})

    async def _control_rate_limits(self, request: web.Request) -> web.Response:
        order = await request.json()
        if "publish_scale" in order:  # only views.publish, at `publish_scale` times Slack's
            self.publish_limits = RateLimits(float(order["publish_scale"]))
        else:
            self.limit_rates(float(order.get("scale", 1.0)))
        return web.json_response({"ok": True})

    async def _control_members(self, request: web.Request) -> web.Response:
        order = await request.json()
        self.set_members(str(order["channel"]), [str(u) for u in order["users"]])
        return web.json_response({"ok": True})

    async def _control_drop(self, request: web.Request) -> web.Response:
        order = await request.json()
        self.drop_after_post(int(order.get("n", 1)))
        return web.json_response({"ok": True})

    async def _control_tsless(self, request: web.Request) -> web.Response:
        order = await request.json()
        ts, channel = str(order.get("ts", "missing")), bool(order.get("channel", True))
        try:
            self.answer_without_ts(int(order.get("n", 1)), ts=ts, channel=channel)
        except ValueError as exc:
            return web.json_response({"ok": False, "error": str(exc)}, status=400)
        return web.json_response({"ok": True})

    async def _control_socket(self, request: web.Request) -> web.Response:
        """Deliver an envelope; 409 when no client is connected, 504 when none acks."""
        order = await request.json()
        try:
            ack = await self.send_socket_envelope(
                order["payload"],
                type=order["type"],
                ack_within=float(order.get("ack_within", 5.0)),
            )
        except SocketModeError as exc:
            status = 409 if self.socket.connected == 0 else 504
            return web.json_response({"ok": False, "error": str(exc)}, status=status)
        return web.json_response(ack)


async def _read_args(request: web.Request) -> tuple[Args, str | None]:
    """Arguments from the query string and a JSON or form body, and the caller's token."""
    args: Args = dict(request.query)
    if request.can_read_body:
        if request.content_type == "application/json":
            try:
                body = await request.json()
            except ValueError:
                raise SlackError("invalid_json") from None
            if not isinstance(body, dict):
                raise SlackError("invalid_json")
            args.update(body)
        else:
            args.update({k: v for k, v in (await request.post()).items() if isinstance(v, str)})
    token = args.pop("token", None)
    bearer = request.headers.get("Authorization", "")
    if bearer.startswith("Bearer "):
        token = bearer.removeprefix("Bearer ").strip()
    return args, token


def _failure_response(failure: _Failure) -> web.Response:
    """The answer to an injected failure; a 429 carries Slack's body and `Retry-After`."""
    body = {"ok": False, "error": HTTP_ERRORS.get(failure.status, "fatal_error")}
    headers = {"Retry-After": str(failure.retry_after)} if failure.status == 429 else {}
    return web.json_response(body, status=failure.status, headers=headers)


def _without_ts(body: dict[str, Any], shape: _Tsless) -> dict[str, Any]:
    """A post's `ok` answer as Slack gave it in the odd case: its ts (and the message's)
    missing, empty or null; its channel left out unless `shape.channel`."""
    odd = {k: v for k, v in body.items() if k != "ts" and (shape.channel or k != "channel")}
    message = {k: v for k, v in body.get("message", {}).items() if k != "ts"}
    if shape.ts != "missing":
        odd["ts"] = message["ts"] = "" if shape.ts == "empty" else None
    return odd | {"message": message}


def _retry(order: Mapping[str, Any]) -> int:
    return int(order.get("retry_after", 1))
