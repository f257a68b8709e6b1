"""`signoff serve` as a real process against the local fake Slack, and requests signed the way
Slack signs them (`v0:` + timestamp + body, HMAC-SHA256 with the signing secret)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bot.dev.slack.fake_web import trigger
from bot.slack.inbound import Signature

from .helpers import SIGNOFF
from .helpers import TOKEN
from .helpers import clean_env
from .helpers import free_port
from .helpers import terminate

SIGNING_SECRET = "e2e-signing-secret"
BOT_TOKEN = "xoxb-test"
APP_TOKEN = "xapp-test"
APPROVALS = "C0APPROVALS"
ONCALL = "C0ONCALL"
REQUESTER, BOB, ANN, EVE = "U0REQ", "U0BOB", "U0ANN", "U0EVE"

POLICY = f"""
[policies.tools.issue_refund]
channel = "{APPROVALS}"
approvers = ["{BOB}", "{ANN}"]
allow_edit = true
"""


class SlackServer:
    """A running `signoff serve` with Slack settings pointing at the fake."""

    def __init__(self, process: subprocess.Popen[bytes], port: int, log: Path) -> None:
        self.process = process
        self.base = f"http://127.0.0.1:{port}"
        self.log = log

    def api(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        request.add_header("Authorization", f"Bearer {TOKEN}")
        return _send(request)

    def start_run(
        self,
        run_id: str,
        task: str = "Refund order 4471",
        *,
        agent: str = "refund-agent",
        requested_by: str = REQUESTER,
        accepted: tuple[int, ...] = (200, 201, 202),
    ) -> Any:
        """Start a run over the HTTP API, as `requested_by`; the run's view. The API must
        answer with one of `accepted`."""
        body = {"agent": agent, "task": task, "run_id": run_id, "requested_by": requested_by}
        status, view = self.api("POST", "/v1/runs", body)
        assert status in accepted, view
        return view

    def slack(
        self,
        body: bytes,
        *,
        content_type: str = "application/x-www-form-urlencoded",
        secret: str = SIGNING_SECRET,
        timestamp: int | None = None,
    ) -> tuple[int, bytes, float]:
        """POST to /slack/events signed as Slack signs; (status, body, seconds to answer)."""
        stamp = str(timestamp if timestamp is not None else int(time.time()))
        signature = Signature(secret).sign(stamp, body)
        request = urllib.request.Request(self.base + "/slack/events", data=body, method="POST")
        request.add_header("Content-Type", content_type)
        request.add_header("X-Slack-Request-Timestamp", stamp)
        request.add_header("X-Slack-Signature", signature)
        started = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.read(), time.monotonic() - started
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read(), time.monotonic() - started

    def get(self, path: str) -> tuple[int, str]:
        """GET an unauthenticated path (`/readyz`, `/metrics`): its status and text."""
        try:
            with urllib.request.urlopen(self.base + path, timeout=10) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def run(self, run_id: str) -> dict[str, Any]:
        status, view = self.api("GET", f"/v1/runs/{run_id}")
        assert status == 200, view
        return dict(view)

    def wait_until(self, check: Callable[[], Any], within: float = 15.0) -> Any:
        return wait_while_alive(self.process, self.log, check, within)

    def healthy(self) -> bool:
        try:
            request = urllib.request.Request(self.base + "/healthz")
            return _send(request)[0] == 200
        except (urllib.error.URLError, ConnectionError):
            return False

    def stop(self) -> int:
        return terminate(self.process, self.log)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def __enter__(self) -> SlackServer:
        return self

    def __exit__(self, *exc: object) -> None:
        """Killed on the way out, unless it has already exited (a test that stopped it)."""
        if self.process.poll() is None:
            self.kill()


def environment(tmp_path: Path, world: Path, port: int, slack_url: str) -> dict[str, str]:
    env = clean_env("SIGNOFF_", "SLACK_")
    return env | {
        "SIGNOFF_DATABASE_URL": f"sqlite:///{tmp_path / 'signoff.db'}",
        "SIGNOFF_WORLD_DB": str(world),
        "SIGNOFF_API_TOKEN": TOKEN,
        "SIGNOFF_HOST": "127.0.0.1",
        "SIGNOFF_PORT": str(port),
        "SIGNOFF_ONCALL_CHANNEL": ONCALL,
        "SIGNOFF_APPROVALS_CHANNEL": APPROVALS,
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "SLACK_API_URL": slack_url,
    }


def start_server(
    tmp_path: Path,
    world: Path,
    slack_url: str,
    *,
    extra: dict[str, str] | None = None,
    policy: str = POLICY,
) -> SlackServer:
    (tmp_path / "signoff.toml").write_text(policy, "utf-8")
    port = free_port()
    env = environment(tmp_path, world, port, slack_url) | (extra or {})
    log = tmp_path / f"serve-{port}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [SIGNOFF, "serve"], cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    server = SlackServer(process, port, log)
    server.wait_until(server.healthy, within=60)  # a loaded machine starts slowly
    return server


# payloads, shaped like the ones Slack sends


def button(
    action: str,
    value: str,
    *,
    user: str,
    channel: str = APPROVALS,
    ts: str = "1",
    issued: float | None = None,
) -> bytes:
    """A click; its trigger_id was issued at `issued` (now by default) and lives 3 s."""
    payload = {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "team_id": "T0SIGNOFF"},
        "api_app_id": "A0SIGNOFF",
        "token": "legacy-verification-token",
        "container": {"type": "message", "message_ts": ts, "channel_id": channel},
        "trigger_id": trigger(issued),
        "team": {"id": "T0SIGNOFF", "domain": "signoff"},
        "channel": {"id": channel, "name": "approvals"},
        "message": {"type": "message", "ts": ts, "text": "card"},
        "response_url": "http://127.0.0.1:9/response",
        "actions": [
            {
                "action_id": action,
                "block_id": f"approval:{value}",
                "value": value,
                "type": "button",
                "action_ts": str(time.time()),
            }
        ],
    }
    return form({"payload": json.dumps(payload)})


def submission(
    callback_id: str, private_metadata: str, values: dict[str, str], *, user: str
) -> bytes:
    payload = {
        "type": "view_submission",
        "team": {"id": "T0SIGNOFF", "domain": "signoff"},
        "user": {"id": user, "username": user.lower(), "team_id": "T0SIGNOFF"},
        "api_app_id": "A0SIGNOFF",
        "token": "legacy-verification-token",
        "trigger_id": trigger(),
        "view": {
            "id": "V0MODAL",
            "type": "modal",
            "callback_id": callback_id,
            "private_metadata": private_metadata,
            "state": {
                "values": {
                    block: {block: {"type": "plain_text_input", "value": value}}
                    for block, value in values.items()
                }
            },
        },
    }
    return form({"payload": json.dumps(payload)})


def slash(text: str, *, user: str, channel: str = APPROVALS) -> bytes:
    return form(
        {
            "token": "legacy-verification-token",
            "team_id": "T0SIGNOFF",
            "team_domain": "signoff",
            "channel_id": channel,
            "channel_name": "approvals",
            "user_id": user,
            "user_name": user.lower(),
            "command": "/runs",
            "text": text,
            "api_app_id": "A0SIGNOFF",
            "response_url": "http://127.0.0.1:9/response",
            "trigger_id": f"trigger-{time.monotonic_ns()}",
        }
    )


def form(fields: dict[str, str]) -> bytes:
    return urllib.parse.urlencode(fields).encode()


def _send(request: urllib.request.Request) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            raw = response.read()
            return response.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        return exc.code, json.loads(raw) if raw else None


class FakeSlackProcess:
    """The local fake Slack in its own process, driven through its `/_fake/` routes, so the
    test's blocking HTTP calls never stall it."""

    def __init__(self, tmp_path: Path) -> None:
        ready = tmp_path / "fake-slack.url"
        self.log = tmp_path / "fake-slack.log"
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                [
                    *(sys.executable, "-m", "bot.dev.slack"),
                    *("--port", "0", "--ready-file", str(ready)),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 60  # a loaded machine starts slowly
        while not ready.exists():
            assert self.process.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, "the fake Slack did not start"
            time.sleep(0.05)
        self.base_url = ready.read_text("utf-8").strip()
        self.root = self.base_url.removesuffix("/api/")

    def _get(self, name: str) -> Any:
        with urllib.request.urlopen(f"{self.root}/_fake/{name}", timeout=60) as response:
            return json.loads(response.read())

    def control(self, name: str, order: dict[str, Any]) -> Any:
        request = urllib.request.Request(
            f"{self.root}/_fake/{name}", data=json.dumps(order).encode(), method="POST"
        )
        request.add_header("Content-Type", "application/json")
        return _send(request)[1]

    def socket_ack(self, kind: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        """Deliver `payload` to the bot over Socket Mode as a `kind` envelope: the bot's
        acknowledgement, or None when it did not acknowledge it."""
        got = self.control("socket", {"type": kind, "payload": payload})
        return got if got and "envelope_id" in got else None

    def messages(self, channel: str) -> list[dict[str, Any]]:
        return list(self._get("messages").get(channel, []))

    def cards(self, channel: str = APPROVALS) -> list[dict[str, Any]]:
        """Top-level messages carrying an approval's metadata."""
        return [
            m
            for m in self.messages(channel)
            if m["thread_ts"] is None
            and (m.get("metadata") or {}).get("event_type") == "signoff_approval"
        ]

    def replies(self, channel: str, ts: str) -> list[dict[str, Any]]:
        return [m for m in self.messages(channel) if m["thread_ts"] == ts and m["ts"] != ts]

    def ephemerals(self) -> list[dict[str, Any]]:
        return list(self._get("ephemerals"))

    def told(self, user: str) -> list[dict[str, Any]]:
        """The ephemeral messages `user` was shown."""
        return [e for e in self.ephemerals() if e["user"] == user]

    def views(self) -> list[dict[str, Any]]:
        return list(self._get("views"))

    def modals(self) -> list[dict[str, Any]]:
        """The views opened (`views.open`), not the Homes published."""
        return [v for v in self.views() if v["method"] == "views.open"]

    def updates(self, view_id: str) -> list[dict[str, Any]]:
        """The versions of an open modal the bot put in (`views.update`), oldest first."""
        found = [v["view"] for v in self.views() if v["method"] == "views.update"]
        return [view for view in found if view["id"] == view_id]

    def calls(self) -> list[dict[str, Any]]:
        return list(self._get("calls"))

    def deleted(self) -> list[dict[str, Any]]:
        return list(self._get("deleted"))

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def card_click(action: str, card: dict[str, Any], *, user: str) -> bytes:
    """A click by `user` on the button `action` of a posted approval card."""
    return button(action, approval_id_of(card), user=user, ts=card["ts"])


def told_on_click(
    server: SlackServer, fake: FakeSlackProcess, action: str, card: dict[str, Any], *, user: str
) -> str:
    """What `user` is first told, privately, once they clicked `action` on `card`."""
    status, _, _ = server.slack(card_click(action, card, user=user))
    assert status == 200
    return str(server.wait_until(lambda: fake.told(user))[0]["text"])


def home_opened(user: str, event_id: str | None = None) -> dict[str, Any]:
    """The event Slack sends when `user` opens the app's Home tab: a new one, or with
    `event_id` the one Slack retries."""
    return {
        "type": "event_callback",
        "team_id": "T0SIGNOFF",
        "api_app_id": "A0SIGNOFF",
        "event": {
            "type": "app_home_opened",
            "user": user,
            "channel": "D0" + user[2:],
            "tab": "home",
            "event_ts": f"{time.time():.6f}",
        },
        "event_id": event_id or f"Ev{time.monotonic_ns()}",
        "event_time": int(time.time()),
        "authorizations": [{"team_id": "T0SIGNOFF", "user_id": "U0SIGNOFF", "is_bot": True}],
    }


def open_home(server: SlackServer, user: str) -> None:
    """`user` opens the app's Home tab: the signed event Slack sends, answered 200."""
    body = json.dumps(home_opened(user)).encode()
    status, _, _ = server.slack(body, content_type="application/json")
    assert status == 200


def approval_id_of(card: dict[str, Any]) -> str:
    return str(card["metadata"]["event_payload"]["approval_id"])


def buttons_of(card: dict[str, Any]) -> list[str]:
    """The action ids of the card's buttons (its one actions block)."""
    [actions] = [b for b in card["blocks"] if b["type"] == "actions"]
    return [e["action_id"] for e in actions["elements"]]


def slash_text(server: SlackServer, text: str, user: str) -> str:
    """What `/runs TEXT` answers `user` (the command's own reply)."""
    status, body, _ = server.slack(slash(text, user=user))
    assert status == 200, body
    return str(json.loads(body)["text"])


def wait_while_alive(
    process: subprocess.Popen[bytes], log: Path, check: Callable[[], Any], within: float
) -> Any:
    """`check()`'s first truthy answer, polled while the server `process` lives (its `log`
    is the failure message if it dies or `within` seconds pass)."""
    deadline = time.monotonic() + within
    while True:
        assert process.poll() is None, log.read_text()
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"not within {within}s:\n{log.read_text()}"
        time.sleep(0.05)
