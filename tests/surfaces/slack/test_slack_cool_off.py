"""Cool-off and undo from the card (issue 42.6), through the bolt app `signoff serve` runs, with
requests signed as Slack signs them and its Web API a local fake: the approved card says
"Runs in 5m" with Cancel; an approver's Cancel means the seat provider never hears of the
call; someone else's Cancel is refused to them alone and changes nothing. Once it ran, the
card offers Undo; two clicks at once release the seat once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from support.cool_off_agents import SEATS
from support.cool_off_agents import provider_calls
from support.cool_off_agents import seat_agent
from support.slack_inprocess import BOB
from support.slack_inprocess import Slack
from support.slack_inprocess import click
from support.slack_inprocess import slack_app

from bot.slack import cards
from bot.slack.actions import Action
from runtime import Policies
from runtime import Policy
from runtime import Runtime
from store import RunStatus
from store import open_store

EVE = "U0EVE"


@pytest.fixture(autouse=True)
def seats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SEATS, str(tmp_path / "seats.log"))


@asynccontextmanager
async def seat_slack(tmp_path: Path, **settings: Any) -> AsyncIterator[tuple[Runtime, Slack]]:
    """The seat agent on the test's store, `hold_seat` approved by Bob under `settings`, and
    the Slack app over it; the store closed on the way out."""
    store = await open_store(f"sqlite:///{tmp_path / 'signoff.db'}")
    policies = Policies(tools={"hold_seat": Policy(approvers=(BOB,), **settings)})
    rt = Runtime(store, [seat_agent], policies=policies)
    async with slack_app(rt) as slack:
        yield rt, slack
    await rt.store.close()


@pytest.fixture
async def cooling(tmp_path: Path) -> AsyncIterator[tuple[Runtime, Slack]]:
    async with seat_slack(tmp_path, cool_off="5m") as both:
        yield both


@pytest.fixture
async def undoable(tmp_path: Path) -> AsyncIterator[tuple[Runtime, Slack]]:
    async with seat_slack(tmp_path, undo_for="1h") as both:
        yield both


async def approved_by_click(rt: Runtime, slack: Slack) -> tuple[str, str]:
    run_id = await rt.start("seat-agent", "Hold seat 12A", requested_by="U0RILEY")
    (approval,) = await rt.approvals(run_id)
    status, _, _ = await slack.send(click(approval.id, Action.APPROVE.value))
    assert status == 200
    await slack.background.drain()
    return run_id, approval.id


def buttons(card: dict[str, Any]) -> list[str]:
    return [
        element["action_id"]
        for block in card["blocks"]
        if block["type"] == "actions"
        for element in block["elements"]
    ]


def text_of(card: dict[str, Any]) -> str:
    return str(card["blocks"])


async def test_cancel_from_the_card_runs_nothing(cooling: tuple[Runtime, Slack]) -> None:
    rt, slack = cooling
    run_id, approval_id = await approved_by_click(rt, slack)
    waiting = await rt.queries.approval(approval_id)
    assert waiting.cool_off == "waiting"
    assert waiting.cool_off_until is not None
    card = cards.approval_message(
        waiting, await rt.get(run_id), now=waiting.cool_off_until - timedelta(minutes=3, seconds=30)
    )
    assert buttons(card) == [Action.CANCEL_COOL_OFF.value]
    assert "Runs in 4m (<!date^" in text_of(card)
    assert "unless an approver cancels it" in text_of(card)
    status_reply = await slack.slash(f"status {run_id}")
    assert "ready to resume" not in status_reply  # nothing resumes it before the cool-off ends
    assert "the call waits out its cool-off until" in status_reply

    status, _, _ = await slack.send(click(approval_id, Action.CANCEL_COOL_OFF.value, user=EVE))
    await slack.background.drain()
    assert status == 200
    assert (await rt.queries.approval(approval_id)).cool_off == "waiting"
    (told,) = [e for e in slack.fake.ephemerals if e.user == EVE]
    assert "may not cancel cool off approval" in told.text

    status, _, _ = await slack.send(click(approval_id, Action.CANCEL_COOL_OFF.value))
    await slack.background.drain()

    assert status == 200
    cancelled = await rt.queries.approval(approval_id)
    assert (cancelled.cool_off, cancelled.cool_off_by) == ("cancelled", BOB)
    assert (await rt.get(run_id)).status == RunStatus.DONE
    assert provider_calls() == []  # the seat provider never heard of the call
    after = cards.approval_message(cancelled, await rt.get(run_id))
    assert buttons(after) == []
    assert "Cancelled by <@U0BOB> before it ran: nothing was done" in text_of(after)
    events = [e for e in await rt.queries.audit(approval_id=approval_id) if e.actor == BOB]
    assert "cool_off_cancelled" in [e.action for e in events]


async def test_undo_from_the_card_twice_at_once_releases_once(
    undoable: tuple[Runtime, Slack],
) -> None:
    rt, slack = undoable
    run_id, approval_id = await approved_by_click(rt, slack)
    assert (await rt.get(run_id)).status == RunStatus.DONE
    ran = await rt.queries.approval(approval_id)
    card = cards.approval_message(ran, await rt.get(run_id), now=ran.decided_at)
    assert buttons(card) == [Action.UNDO.value]
    assert provider_calls() == ["hold 12A"]

    answers = await asyncio.gather(
        slack.send(click(approval_id, Action.UNDO.value)),
        slack.send(click(approval_id, Action.UNDO.value)),
    )
    await slack.background.drain()

    assert [status for status, _, _ in answers] == [200, 200]
    assert provider_calls() == ["hold 12A", "release 12A"]
    undone = await rt.queries.approval(approval_id)
    assert undone.undone_by == BOB
    (told,) = [e for e in slack.fake.ephemerals if e.user == BOB]
    assert "undone already by U0BOB" in told.text
    after = cards.approval_message(undone, await rt.get(run_id), now=undone.undone_at)
    assert buttons(after) == []
    assert "Undone by <@U0BOB>" in text_of(after)
