"""A decision the store cannot write (disk full, database down, locked too long) is acked to
Slack and tells the clicker, ephemerally where they clicked, that nothing was recorded; the
log gets one line and no traceback. A database that stalls does not hold Slack's answer: the
ack comes within `ACK_WITHIN` and the person learns the outcome once it is known.

The bolt app is the one `signoff serve` runs (listeners, error handler), in this process;
requests are signed as Slack signs them; the fake Slack is real HTTP; the failures are
injected at the store, under the real runtime."""

from __future__ import annotations

import asyncio
import json
import logging
import time
import urllib.parse
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest

from bot.directory import web_client
from bot.slack import listeners
from bot.slack.fake import FakeSlack
from bot.slack.fake_web import trigger
from bot.slack.inbound import Signature
from bot.tasks import Background
from runtime import Runtime
from runtime.policy import Policies, Policy
from store import Store
from store import errors as store_errors

SECRET = "not-recorded-secret"
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


@pytest.fixture
async def slack(make_runtime: Callable[..., Runtime]) -> AsyncIterator[tuple[Slack, Runtime]]:
    fake = FakeSlack(channels=(CHANNEL,), users={BOB: "bob"})
    await fake.start()
    rt = make_runtime(policies=Policies(default=Policy(approvers=(BOB,), allow_edit=True)))
    background = Background()
    app = AsyncApp(
        client=web_client("xoxb-test", base_url=fake.base_url),
        signing_secret=SECRET,
        process_before_response=True,
        raise_error_for_unhandled_request=False,
    )
    listeners.register(app, rt, background)
    app.error(listeners.one_line_error)
    yield Slack(app, fake, background), rt
    await background.drain()
    await fake.stop()


def click(approval_id: str) -> dict[str, Any]:
    return {
        "type": "block_actions",
        "user": {"id": BOB},
        "trigger_id": trigger(),
        "channel": {"id": CHANNEL},
        "container": {"type": "message", "channel_id": CHANNEL, "message_ts": "1.1"},
        "actions": [{"action_id": "approve", "value": approval_id, "type": "button"}],
    }


def decline(approval_id: str) -> dict[str, Any]:
    values = {"reason": {"reason": {"type": "plain_text_input", "value": "not this one"}}}
    return {
        "type": "view_submission",
        "user": {"id": BOB},
        "view": {
            "id": "V1",
            "type": "modal",
            "callback_id": "decline_reason",
            "private_metadata": approval_id,
            "state": {"values": values},
        },
    }


FAILURES = {
    "disk full": store_errors.DiskFull("database or disk is full"),
    "database down": store_errors.DatabaseError("connection refused"),
    "lock timeout": store_errors.DatabaseError("database is locked"),
}


@pytest.mark.parametrize("failure", sorted(FAILURES))
async def test_a_click_the_store_cannot_record_is_acked_and_told_with_one_line(
    slack: tuple[Slack, Runtime],
    store: Store,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    failure: str,
) -> None:
    app, rt = slack
    approval, _ = await rt.request_approval("issue_refund", {"amount": 5})

    async def cannot_write(*args: Any, **kwargs: Any) -> Any:
        raise FAILURES[failure]

    monkeypatch.setattr(store, "decide_approval", cannot_write)
    caplog.set_level(logging.INFO)
    status, body, seconds = await app.send(click(approval.id))
    status_modal, answer, _ = await app.send(decline(approval.id))
    await app.background.drain()

    assert (status, body) == (200, "")
    assert seconds < 1
    [told] = app.fake.ephemerals
    assert (told.user, told.channel) == (BOB, CHANNEL)
    assert told.text.startswith("Not recorded — nothing changed, try again")
    assert status_modal == 200
    assert json.loads(answer)["errors"]["reason"].startswith("Not recorded")
    assert (await rt.desk.get(approval.id)).state == "pending"
    lines = [r for r in caplog.records if "not recorded" in r.getMessage()]
    assert len(lines) == 2
    assert all(r.exc_info is None for r in lines)
    assert "Traceback" not in caplog.text


async def test_a_stalled_database_does_not_hold_the_ack(
    slack: tuple[Slack, Runtime], store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, rt = slack
    approval, _ = await rt.request_approval("issue_refund", {"amount": 5})
    decide = store.decide_approval

    async def stalled(*args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(2.0)
        return await decide(*args, **kwargs)

    monkeypatch.setattr(store, "decide_approval", stalled)
    status, _, seconds = await app.send(click(approval.id))
    assert status == 200
    assert seconds < listeners.ACK_WITHIN + 0.2
    assert (await rt.desk.get(approval.id)).state == "pending"  # still being written
    await app.background.drain()
    assert (await rt.desk.get(approval.id)).state == "approved"
    assert app.fake.ephemerals == []  # recorded: nothing to apologise for
