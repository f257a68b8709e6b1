"""Undo tells the truth on the card (issue 42.6), through the bolt app `signoff serve` runs,
with requests signed as Slack signs them and its Web API a local fake: while the approved
hold runs, the card offers no Undo and a click on an earlier one is refused (nothing
changes); an Undo whose release fails tells the clicker, and the card says the undo failed
and why, with Undo to try again; the retry releases the seat once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from support.slack_inprocess import BOB
from support.slack_inprocess import Slack
from support.slack_inprocess import click
from support.slack_inprocess import slack_app
from support.undo_truth_agents import PROVIDER
from support.undo_truth_agents import fresh_provider  # noqa: F401 (autouse)
from support.undo_truth_agents import holder

from bot.slack import cards
from bot.slack.actions import Action
from runtime import Policies
from runtime import Policy
from runtime import Runtime
from store import open_store


@pytest.fixture
async def undoable(tmp_path: Path) -> AsyncIterator[tuple[Runtime, Slack]]:
    store = await open_store(f"sqlite:///{tmp_path / 'signoff.db'}")
    policies = Policies(tools={"hold": Policy(approvers=(BOB,), undo_for="1h")})
    rt = Runtime(store, [holder], policies=policies)
    async with slack_app(rt) as slack:
        yield rt, slack
    await store.close()


def buttons(card: dict[str, Any]) -> list[str]:
    return [e["action_id"] for b in card["blocks"] if b["type"] == "actions" for e in b["elements"]]


async def card_of(rt: Runtime, approval_id: str) -> dict[str, Any]:
    approval = await rt.queries.approval(approval_id)
    run = await rt.get(approval.run_id or "")
    return cards.approval_message(approval, run, now=approval.decided_at)


async def test_no_undo_while_the_call_runs(undoable: tuple[Runtime, Slack]) -> None:
    rt, slack = undoable
    run_id = await rt.start("holder", "Hold 9F", requested_by="U0RILEY")
    (approval,) = await rt.approvals(run_id)
    PROVIDER.holding, PROVIDER.go = asyncio.Event(), asyncio.Event()
    assert (await slack.send(click(approval.id, Action.APPROVE.value)))[0] == 200
    await asyncio.wait_for(PROVIDER.holding.wait(), 10)

    card = await card_of(rt, approval.id)
    assert Action.UNDO.value not in buttons(card)
    assert "Undo is offered once it has completed" in str(card["blocks"])
    assert (await slack.send(click(approval.id, Action.UNDO.value)))[0] == 200
    PROVIDER.go.set()
    await slack.background.drain()

    (told,) = [e for e in slack.fake.ephemerals if e.user == BOB]
    assert "its call is still running" in told.text
    assert (await rt.queries.approval(approval.id)).undone_by is None
    assert buttons(await card_of(rt, approval.id)) == [Action.UNDO.value]  # now it completed
    assert [what for what, _ in PROVIDER.calls] == ["hold 9F"]


async def test_a_failed_undo_says_so_on_the_card_and_may_be_clicked_again(
    undoable: tuple[Runtime, Slack],
) -> None:
    rt, slack = undoable
    run_id = await rt.start("holder", "Hold 9F", requested_by="U0RILEY")
    (approval,) = await rt.approvals(run_id)
    assert (await slack.send(click(approval.id, Action.APPROVE.value)))[0] == 200
    await slack.background.drain()
    PROVIDER.release_down = True

    assert (await slack.send(click(approval.id, Action.UNDO.value)))[0] == 200
    await slack.background.drain()

    (told,) = [e for e in slack.fake.ephemerals if e.user == BOB]
    assert "Undo failed" in told.text
    assert "the seat provider is down" in told.text
    card = await card_of(rt, approval.id)
    assert "Undo failed" in str(card["blocks"])
    assert "Undone by" not in str(card["blocks"])
    assert buttons(card) == [Action.UNDO.value]
    assert (await rt.get(run_id)).stop_reason == "answered"

    PROVIDER.release_down = False
    assert (await slack.send(click(approval.id, Action.UNDO.value)))[0] == 200
    await slack.background.drain()

    card = await card_of(rt, approval.id)
    assert "Undone by <@U0BOB>" in str(card["blocks"])
    assert buttons(card) == []
    assert [what for what, _ in PROVIDER.calls] == ["hold 9F", "release 9F"]
    assert (await rt.get(run_id)).stop_reason == "undone"
