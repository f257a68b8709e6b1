"""Building one person's Home reads what concerns them, not every approval: with many
approvals in the store, opening the tab (a signed `app_home_opened` through the bolt app
`signoff serve` runs, against the fake Slack) reads a bounded number of rows, each read
filtered and limited, and the Home shows that person's items only."""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import pytest
from support.helpers import eventually
from support.slack_inprocess import Slack
from support.slack_inprocess import slack_app

from bot.batches import MAX_BATCH
from bot.slack import home
from bot.slack import home_view
from runtime import Runtime
from runtime.approvals.policy import Policies
from runtime.approvals.policy import Policy
from runtime.approvals.policy import StaticDirectory
from store import Store

BOB, EVE = "U0BOB", "U0EVE"
OTHERS = 250


async def open_home(slack: Slack, user: str) -> None:
    event = {
        "type": "app_home_opened",
        "user": user,
        "tab": "home",
        "channel": "D0" + user[2:],
        "event_ts": f"{time.time():.6f}",
    }
    assert await slack.send_event(event) == 200


async def shown_now(slack: Slack, user: str) -> list[str]:
    return published(slack, user)


def published(slack: Slack, user: str) -> list[str]:
    """The texts of `user`'s Home as last published."""
    views = [v for v in slack.fake.views if v.method == "views.publish" and v.user_id == user]
    return [json.dumps(b) for b in views[-1].view["blocks"]] if views else []


async def test_a_home_reads_only_what_concerns_its_person(
    make_runtime: Callable[..., Runtime], store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt = make_runtime([], policies=Policies(default=Policy(approvers=(BOB,))))
    for n in range(OTHERS):  # other people's approvals, most of them decided by Bob
        approval, _ = await rt.request_approval(
            "issue_refund", {"order_id": f"other{n}"}, requested_by=f"U0R{n % 7}"
        )
        if n % 3:
            await rt.decide(approval.id, "approved", by=BOB, resume=False)
    hers = [
        (await rt.request_approval("issue_refund", {"order_id": f"eve{n}"}, requested_by=EVE))[0]
        for n in range(3)
    ]
    await rt.decide(hers[0].id, "declined", by=BOB, reason="no", resume=False)

    fetched: dict[str, list[int]] = defaultdict(list)
    read = store._read  # type: ignore[attr-defined]

    async def counted(name: str, params: dict[str, Any]) -> list[Any]:
        found = await read(name, params)
        fetched[name].append(len(found))
        return list(found)

    monkeypatch.setattr(store, "_read", counted)
    async with slack_app(rt) as slack:

        async def shown(user: str) -> str:
            await open_home(slack, user)
            return "".join(await eventually(lambda: shown_now(slack, user)))

        eve = await shown(EVE)
        for_eve = dict(fetched)
        fetched.clear()
        bob = await shown(BOB)
    assert all(f"eve{n}" in eve for n in range(3))  # her requests, with their states
    assert "declined by" in eve
    assert "pending" in eve
    assert "other" not in eve  # nothing of anyone else's
    assert "eve" in bob  # what Bob may decide, and his decisions
    assert "other" in bob

    for reads in (for_eve, fetched):
        assert not {"list_approvals", "list_pages"} & reads.keys(), reads
        assert "list_approvals_by_state" not in reads  # no scan of everyone's pending
        assert reads["decider_groups"] == [0]
        assert reads["approvals_of_person"][0] <= home.READ_LIMIT
        assert reads["open_pages_for"] == [0]
    assert for_eve["approvals_of_person"] == [3]  # Eve's own, not a row more
    assert for_eve["pending_for_deciders"] == [0]  # Eve decides nothing
    # Bob's first page: one read, at most a batch's worth (the "decide together" buttons count)
    [rows] = fetched["pending_for_deciders"]
    assert home_view.SECTION < rows <= MAX_BATCH
    total = sum(sum(rows) for rows in for_eve.values())
    assert total <= 3 + 1, for_eve  # the store holds OTHERS + 3 approvals


async def test_a_home_shows_its_persons_approvals_behind_a_backlog_of_others(
    make_runtime: Callable[..., Runtime], store: Store
) -> None:
    """600 older approvals for someone else, then 12 for a user group Bob belongs to: Bob's
    Home lists his 10 longest-waiting and says exactly how many more (issue 40.4)."""
    others = make_runtime([], policies=Policies(default=Policy(approvers=("U0OTHER",))))
    for n in range(600):
        await others.request_approval("issue_refund", {"order_id": f"other{n}"}, requested_by=EVE)
    rt = make_runtime(
        [],
        policies=Policies(default=Policy(approvers=("S0FINANCE",))),
        directory=StaticDirectory({"S0FINANCE": {BOB}}),
    )
    for n in range(12):
        await rt.request_approval("issue_refund", {"order_id": f"bob{n:02}"}, requested_by=EVE)
    async with slack_app(rt) as slack:
        await open_home(slack, BOB)
        bob = "".join(await eventually(lambda: shown_now(slack, BOB)))
        await open_home(slack, EVE)
        eve = "".join(await eventually(lambda: shown_now(slack, EVE)))
    shown = [n for n in range(12) if f"bob{n:02}" in bob]
    assert shown == list(range(10))  # longest-waiting first
    assert "and 2 more" in bob
    assert "other" not in bob
    assert "Nothing waits" not in bob
    assert "Nothing waits" in eve  # she decides none of them
