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
from collections.abc import AsyncIterator
from collections.abc import Callable
from typing import Any

import pytest
from support.slack_inprocess import BOB
from support.slack_inprocess import CHANNEL
from support.slack_inprocess import Slack
from support.slack_inprocess import click
from support.slack_inprocess import slack_app
from support.slack_inprocess import submit

from bot.slack import listeners
from runtime import Runtime
from runtime.approvals.policy import Policies
from runtime.approvals.policy import Policy
from store import Store
from store import errors as store_errors


@pytest.fixture
async def slack(make_runtime: Callable[..., Runtime]) -> AsyncIterator[tuple[Slack, Runtime]]:
    rt = make_runtime(policies=Policies(default=Policy(approvers=(BOB,), allow_edit=True)))
    async with slack_app(rt) as app:
        yield app, rt


def decline(approval_id: str) -> dict[str, Any]:
    return submit("decline_reason", approval_id, {"reason": "not this one"})


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

    monkeypatch.setattr(store, "cast_vote", cannot_write)
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
    decide = store.cast_vote

    async def stalled(*args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(2.0)
        return await decide(*args, **kwargs)

    monkeypatch.setattr(store, "cast_vote", stalled)
    status, _, seconds = await app.send(click(approval.id))
    assert status == 200
    assert seconds < listeners.ACK_WITHIN + 0.2
    assert (await rt.desk.get(approval.id)).state == "pending"  # still being written
    await app.background.drain()
    assert (await rt.desk.get(approval.id)).state == "approved"
    assert app.fake.ephemerals == []  # recorded: nothing to apologise for
