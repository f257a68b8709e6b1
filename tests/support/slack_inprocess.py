"""The bolt app `signoff serve` runs (its listeners and error handler), in the test's
process, on the test's runtime, against the fake Slack over real HTTP; requests signed as
Slack signs them and dispatched as the HTTP endpoint dispatches them."""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

from bot.dev.slack.fake import FakeSlack
from bot.dev.slack.fake_web import trigger
from bot.slack import listeners
from bot.slack.app import bolt_app
from bot.slack.inbound import Signature
from bot.tasks import Background
from runtime import Runtime

SECRET = "in-process-secret"
BOB, CHANNEL = "U0BOB", "C0APPROVALS"


class Slack:
    def __init__(self, app: AsyncApp, fake: FakeSlack, background: Background) -> None:
        self.app, self.fake, self.background = app, fake, background

    async def send(self, payload: dict[str, Any]) -> tuple[int, str, float]:
        raw = urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()
        stamp = str(int(time.time()))
        headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": Signature(SECRET).sign(stamp, raw),
        }
        started = time.monotonic()
        answer = await self.app.async_dispatch(AsyncBoltRequest(body=raw.decode(), headers=headers))
        return answer.status, answer.body, time.monotonic() - started

    async def signed(self, raw: bytes, content_type: str) -> BoltResponse:
        """`raw` dispatched to the app as Slack sends it: signed now with the app's secret."""
        stamp = str(int(time.time()))
        headers = {
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": Signature(SECRET).sign(stamp, raw),
        }
        return await self.app.async_dispatch(AsyncBoltRequest(body=raw.decode(), headers=headers))

    async def slash(self, text: str, *, user: str = BOB) -> str:
        """A `/runs` command, signed: the body of its answer (the ephemeral reply)."""
        fields = {
            "command": "/runs",
            "text": text,
            "user_id": user,
            "channel_id": CHANNEL,
            "team_id": "T0SIGNOFF",
            "response_url": "http://127.0.0.1:9/response",
            "trigger_id": trigger(),
        }
        raw = urllib.parse.urlencode(fields).encode()
        answer = await self.signed(raw, "application/x-www-form-urlencoded")
        assert answer.status == 200, answer.body
        return answer.body

    async def send_event(self, event: dict[str, Any]) -> int:
        """An Events API callback (`app_home_opened`, ...), signed; its status."""
        envelope = {
            "type": "event_callback",
            "team_id": "T0SIGNOFF",
            "api_app_id": "A0SIGNOFF",
            "event_id": f"Ev{time.monotonic_ns()}",
            "event_time": int(time.time()),
            "event": event,
        }
        raw = json.dumps(envelope).encode()
        answer = await self.signed(raw, "application/json")
        return answer.status


@asynccontextmanager
async def slack_app(rt: Runtime, *, page_url: str | None = None) -> AsyncIterator[Slack]:
    """`page_url`: the approvals page's address (`public_url`), for a card that needs a
    passkey there."""
    fake = FakeSlack(channels=(CHANNEL,), users={BOB: "bob"})
    await fake.start()
    background = Background()
    app = bolt_app("xoxb-test", base_url=fake.base_url, signing_secret=SECRET, link=None)
    listeners.register(app, rt, background, page_url=page_url)
    app.error(listeners.one_line_error)
    try:
        yield Slack(app, fake, background)
    finally:
        await background.drain()
        await fake.stop()


def click(approval_id: str, action: str = "approve", *, user: str = BOB) -> dict[str, Any]:
    return {
        "type": "block_actions",
        "user": {"id": user},
        "trigger_id": trigger(),
        "channel": {"id": CHANNEL},
        "container": {"type": "message", "channel_id": CHANNEL, "message_ts": "1.1"},
        "actions": [{"action_id": action, "value": approval_id, "type": "button"}],
    }


def submit(
    callback_id: str, approval_id: str, values: dict[str, str], *, user: str = BOB
) -> dict[str, Any]:
    state = {
        block: {block: {"type": "plain_text_input", "value": value}}
        for block, value in values.items()
    }
    return {
        "type": "view_submission",
        "user": {"id": user},
        "view": {
            "id": "V1",
            "type": "modal",
            "callback_id": callback_id,
            "private_metadata": approval_id,
            "state": {"values": state},
        },
    }
