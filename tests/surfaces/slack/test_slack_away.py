"""Away from the App Home (issue 43.4), over requests signed as Slack signs them, through the
bolt app `signoff serve` runs (in the test's process, against the fake Slack): alice's Home
has **Away…**; its modal refuses a time that has passed and herself as delegate (nothing
changes), then records "away until …, delegate carol" (audited) and her Home says so with
**I'm back**. Carol's Home says whom she decides for, and Approve there decides alice's
approval *for* her: the record and the audit say "carol for alice". **I'm back** ends it.
Nobody says someone else is away: the permission table's row refuses it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from support.slack_inprocess import Slack
from support.slack_inprocess import click
from support.slack_inprocess import slack_app

from bot.dev.slack.fake_web import trigger
from bot.slack.escape import WORD_JOINER
from runtime import Actor
from runtime import Policies
from runtime import Policy
from runtime import Runtime
from runtime import errors
from store import open_store

ALICE, CAROL, RILEY, EVE = "U0ALICE", "U0CAROL", "U0RILEY", "U0EVE"


@pytest.fixture
async def rt(tmp_path: Path) -> AsyncIterator[Runtime]:
    store = await open_store(f"sqlite:///{tmp_path / 'signoff.db'}")
    yield Runtime(store, [], policies=Policies(default=Policy(approvers=(ALICE,))))
    await store.close()


@pytest.fixture
async def slack(rt: Runtime) -> AsyncIterator[Slack]:
    async with slack_app(rt) as app:
        yield app


def from_home(payload: dict[str, Any]) -> dict[str, Any]:
    """A click on a button in the clicker's App Home (no channel there)."""
    payload.pop("channel", None)
    payload["container"] = {"type": "view", "view_id": "V0HOME"}
    payload["view"] = {"id": "V0HOME", "type": "home", "blocks": []}
    return payload


def away_submission(user: str, until: datetime, delegate: str) -> dict[str, Any]:
    values = {
        "until": {
            "until": {"type": "datetimepicker", "selected_date_time": int(until.timestamp())}
        },
        "delegate": {"delegate": {"type": "users_select", "selected_user": delegate}},
    }
    return {
        "type": "view_submission",
        "user": {"id": user},
        "trigger_id": trigger(),
        "view": {
            "id": "V0AWAY",
            "type": "modal",
            "callback_id": "away_until",
            "private_metadata": "",
            "state": {"values": values},
        },
    }


def last_home(slack: Slack, user: str) -> str:
    published = [v.view for v in slack.fake.views if v.method == "views.publish"]
    mine = [v for v in published if v is not None and slack_user(slack, v) == user]
    assert mine, f"no Home published for {user}"
    return json.dumps(mine[-1]["blocks"], ensure_ascii=False).replace(WORD_JOINER, "")


def slack_user(slack: Slack, view: dict[str, Any]) -> str | None:
    return next((v.user_id for v in slack.fake.views if v.view is view), None)


def buttons(home: str) -> list[str]:
    return [
        e["action_id"] for b in json.loads(home) if b["type"] == "actions" for e in b["elements"]
    ]


async def test_away_from_the_home_and_the_delegate_decides_for_them(
    rt: Runtime, slack: Slack
) -> None:
    approval, _ = await rt.request_approval("issue_refund", {"order_id": "o1"}, requested_by=RILEY)
    later = datetime.now(UTC) + timedelta(days=5)

    # the Away… button opens the modal
    status, _, _ = await slack.send(from_home(click("away", "away", user=ALICE)))
    assert status == 200
    await slack.background.drain()
    [opened] = [v.view for v in slack.fake.views if v.method == "views.open"]
    assert opened["callback_id"] == "away_until"
    assert [b.get("block_id") for b in opened["blocks"][1:]] == ["until", "delegate"]

    # refusals show under the field and change nothing
    for until, delegate, field, said in (
        (datetime.now(UTC) - timedelta(hours=1), CAROL, "until", "has passed"),
        (later, ALICE, "delegate", "their own delegate"),
    ):
        status, body, _ = await slack.send(away_submission(ALICE, until, delegate))
        assert status == 200
        answer = json.loads(body)
        assert answer["response_action"] == "errors"
        assert said in answer["errors"][field], answer
    assert await rt.away() == []

    status, body, _ = await slack.send(away_submission(ALICE, later, CAROL))
    assert (status, body) == (200, "")
    await slack.background.drain()
    [away] = await rt.away()
    assert (away.person, away.delegate) == (ALICE, CAROL)
    assert abs((away.until - later).total_seconds()) < 1
    home = last_home(slack, ALICE)
    assert "You are away until" in home
    assert f"<@{CAROL}> decides for you" in home
    assert "back" in buttons(home)
    events = await rt.queries.audit()
    assert [(e.action, e.actor) for e in events if e.action == "away_set"] == [("away_set", ALICE)]

    # carol's Home: whom she decides for, and alice's approval, which she approves for her
    assert await slack.send_event({"type": "app_home_opened", "user": CAROL, "tab": "home"}) == 200
    await slack.background.drain()
    carol = last_home(slack, CAROL)
    assert f"You decide for <@{ALICE}>" in carol
    assert f'"value": "{approval.id}"' in carol  # its Approve button, on her Home
    status, _, _ = await slack.send(from_home(click(approval.id, user=CAROL)))
    assert status == 200
    await slack.background.drain()
    decided = await rt.queries.approval(approval.id)
    assert (decided.state, decided.decided_by, decided.decided_for) == ("approved", CAROL, ALICE)
    [event] = [
        e
        for e in await rt.queries.audit(approval_id=approval.id)
        if e.action == "approval_approved"
    ]
    assert (event.actor, event.detail.get("for")) == (CAROL, ALICE)
    assert await slack.send_event({"type": "app_home_opened", "user": CAROL, "tab": "home"}) == 200
    await slack.background.drain()
    assert f"approved by <@{CAROL}> for <@{ALICE}>" in last_home(slack, CAROL)

    # I'm back: the absence ends, audited, and the Home offers Away… again
    status, _, _ = await slack.send(from_home(click(ALICE, "back", user=ALICE)))
    assert status == 200
    await slack.background.drain()
    assert await rt.away() == []
    assert "away" in buttons(last_home(slack, ALICE))
    assert "away_cleared" in [e.action for e in await rt.queries.audit()]


async def test_nobody_says_someone_else_is_away(rt: Runtime) -> None:
    later = datetime.now(UTC) + timedelta(days=1)
    with pytest.raises(errors.NotPermitted, match="only they may"):
        await rt.set_away(ALICE, until=later, delegate=EVE, by=Actor.of_person(EVE))
    assert await rt.away() == []
    await rt.set_away(ALICE, until=later, delegate=CAROL, by=Actor.of_person(ALICE))
    with pytest.raises(errors.NotPermitted):
        await rt.back(ALICE, by=Actor.of_person(CAROL))
    assert [a.person for a in await rt.away()] == [ALICE]
