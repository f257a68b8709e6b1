"""The App Home tab over real signed requests, a real `signoff serve` and the fake Slack
(which holds `views.publish` to its rate limit): each person sees what is theirs, every
change republishes the Homes it concerns through the outbox, paced and coalesced, and a
refusal from a Home button is shown in that Home."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from support.slack_harness import ANN
from support.slack_harness import BOB
from support.slack_harness import EVE
from support.slack_harness import FakeSlackProcess
from support.slack_harness import SlackServer
from support.slack_harness import open_home
from support.slack_harness import start_server
from support.slack_served import home_button

REQUESTERS = [f"U0R{n:02}" for n in range(25)]
SECRET = "4242-4242-4242-4242"
"""An argument the approval marks sensitive: masked in every Home as the API masks it."""
BURST = 500
PUBLISH_SCALE = 10.0
"""The fake allows `views.publish` at 10 times Slack's Tier 4 (1000 a minute, bursts of 5)."""
PER_MINUTE = 600
"""The server's pace, under the fake's limit as 80 a minute is under Slack's 100."""


@pytest.fixture
def server(tmp_path: Path, world: Path, fake: FakeSlackProcess) -> Iterator[SlackServer]:
    fake.control("rate_limits", {"publish_scale": PUBLISH_SCALE})
    extra = {
        "SIGNOFF_HOME_PUBLISH_PER_MINUTE": str(PER_MINUTE),
        "SIGNOFF_API_RATE_PER_MINUTE": "100000",  # the burst comes through the API
    }
    with start_server(tmp_path, world, fake.base_url, extra=extra) as running:
        yield running


def ask(server: SlackServer, n: int, requester: str) -> str:
    args = {"order_id": f"o{n}", "amount_cents": n + 1, "card": SECRET}
    body = {"tool": "issue_refund", "args": args, "sensitive": ["card"]}
    status, answer = server.api("POST", "/v1/approvals", body | {"requested_by": requester})
    assert status in (200, 201), answer
    return str(answer["id"])


def decide(server: SlackServer, approval_id: str, decision: str, by: str) -> None:
    body = {"decision": decision, "by": by}
    if decision == "declined":
        body["reason"] = "not this one"
    status, answer = server.api("POST", f"/v1/approvals/{approval_id}/decision", body)
    assert status == 200, answer


def homes(fake: FakeSlackProcess) -> dict[str, dict[str, Any]]:
    """Each person's Home as last published."""
    return {v["user_id"]: v["view"] for v in fake.views() if v["method"] == "views.publish"}


def buttons(view: dict[str, Any]) -> set[str]:
    """The record buttons' values (every Home also has its "Away" section's button)."""
    return {
        e["value"]
        for b in view["blocks"]
        if b["type"] == "actions" and b.get("block_id") != "away"
        for e in b["elements"]
    }


def words(view: dict[str, Any]) -> str:
    return json.dumps(view["blocks"])


def test_each_person_sees_only_what_is_theirs(server: SlackServer, fake: FakeSlackProcess) -> None:
    asked = ask(server, 1, EVE)
    for user in (BOB, EVE, "U0NOBODY"):
        open_home(server, user)
    shown = server.wait_until(lambda: (h := homes(fake)).keys() >= {BOB, EVE, "U0NOBODY"} and h)

    assert asked in buttons(shown[BOB])  # an approver: theirs to decide, with its age
    assert "waiting" in words(shown[BOB])
    assert buttons(shown[EVE]) == set()  # the requester: her own request, no buttons
    assert "Your requests" in words(shown[EVE])
    assert "pending" in words(shown[EVE])
    assert buttons(shown["U0NOBODY"]) == set()  # anyone else: nothing of it at all
    assert "o1" not in words(shown["U0NOBODY"])
    assert all(SECRET not in words(view) for view in shown.values())
    assert "o1" in words(shown[BOB])


def test_a_decision_republishes_the_homes_it_concerns(
    server: SlackServer, fake: FakeSlackProcess
) -> None:
    asked = ask(server, 1, EVE)
    server.wait_until(lambda: asked in buttons(homes(fake).get(ANN, {"blocks": []})))

    decide(server, asked, "approved", BOB)

    def current() -> bool:
        shown = homes(fake)
        return (
            asked not in buttons(shown.get(ANN, {"blocks": []}))
            and "approved by" in words(shown.get(EVE, {"blocks": []}))
            and "approved by" in words(shown.get(BOB, {"blocks": []}))
        )

    server.wait_until(current)  # nobody opened the tab again: the outbox did it


def test_a_refusal_from_a_home_button_is_shown_in_that_home(
    server: SlackServer, fake: FakeSlackProcess
) -> None:
    asked = ask(server, 1, BOB)
    click = home_button("approve", f"approval:{asked}", asked, user=EVE, trigger_id="1.2.3")
    status, _, _ = server.slack(click)
    assert status == 200

    shown = server.wait_until(lambda: (h := homes(fake).get(EVE)) and ":warning:" in words(h) and h)
    assert "approver" in words(shown).lower()
    assert not [c for c in fake.calls() if c["method"] == "chat.postEphemeral"]
    assert "not recorded" not in server.log.read_text().lower()


def test_a_burst_of_500_decisions_stays_within_views_publish_limits(
    server: SlackServer, fake: FakeSlackProcess
) -> None:
    with ThreadPoolExecutor(8) as pool:
        asked = list(
            pool.map(lambda n: ask(server, n, REQUESTERS[n % len(REQUESTERS)]), range(BURST))
        )
        decisions = [
            ("declined" if n % 5 == 0 else "approved", (BOB, ANN)[n % 2]) for n in range(BURST)
        ]
        list(pool.map(lambda a, d: decide(server, a, *d), asked, decisions))
    decided_at = time.time()
    people = (BOB, ANN, *REQUESTERS)

    def current() -> bool:
        shown = homes(fake)
        return shown.keys() >= set(people) and all(
            not buttons(shown[p]) and "pending" not in words(shown[p]) for p in people
        )

    server.wait_until(current, within=120)  # every Home ends current, nobody reopening it
    publishes = [c for c in fake.calls() if c["method"] == "views.publish"]
    last = {c["args"]["user_id"]: c["at"] for c in publishes if c["status"] == 200}
    assert all(last[p] >= decided_at - 1 for p in people)
    # Within the limit: in no window of a (scaled) minute more than the tier allows plus
    # its burst, as the fake counts arrivals.
    window = 60 / PUBLISH_SCALE  # 100 calls a window, bursts of 5
    times = sorted(c["at"] for c in publishes)
    busiest = max(sum(1 for t in times if s <= t < s + window) for s in times)
    assert busiest <= 100 + 5, busiest
    # Paced below the limit and one at a time, a call reaches the fake after the one before
    # it did, so however the machine delays them on their way none is refused.
    assert [c["status"] for c in publishes if c["status"] != 200] == []


def test_a_429_from_views_publish_is_waited_out(
    server: SlackServer, fake: FakeSlackProcess
) -> None:
    # The fake now allows a publish a second (bursts of 5), the server paces ten a second:
    # the Homes of a dozen people overrun it, and each 429's Retry-After (1 s) is waited out.
    fake.control("rate_limits", {"publish_scale": 0.6})
    requesters = REQUESTERS[:10]
    asked = [ask(server, n, who) for n, who in enumerate(requesters)]
    for approval_id in asked:
        decide(server, approval_id, "approved", BOB)
    people = (BOB, ANN, *requesters)

    def current() -> bool:
        shown = homes(fake)
        return shown.keys() >= set(people) and all(
            not buttons(shown[p]) and "approved by" in words(shown[p]) for p in requesters
        )

    server.wait_until(current, within=90)
    publishes = [c for c in fake.calls() if c["method"] == "views.publish"]
    refused = [c["at"] for c in publishes if c["status"] == 429]
    assert refused, "the fake's limit was never met"
    for at in refused:  # nothing was sent while Slack had said to wait
        assert not [c for c in publishes if at < c["at"] < at + 0.95], at
    assert {c["status"] for c in publishes} == {200, 429}


def test_a_home_owed_when_the_server_dies_is_published_after_it_restarts(
    tmp_path: Path, world: Path, fake: FakeSlackProcess
) -> None:
    # A pace of 6 a minute: the first Homes spend the burst, the next waits ~10 s in the outbox.
    slow = {"SIGNOFF_HOME_PUBLISH_PER_MINUTE": "6"}
    with start_server(tmp_path, world, fake.base_url, extra=slow) as first:
        asked = ask(first, 1, EVE)
        first.wait_until(lambda: asked in buttons(homes(fake).get(BOB, {"blocks": []})))
        first.wait_until(lambda: homes(fake).keys() >= {BOB, ANN, EVE})
        decide(first, asked, "approved", BOB)
        db = sqlite3.connect(tmp_path / "signoff.db")
        owed = lambda: db.execute(  # noqa: E731
            "SELECT count(*) FROM outbox WHERE topic = 'home_stale' AND sent_at IS NULL"
        ).fetchone()[0]
        paced = lambda: db.execute(  # noqa: E731  # given back to wait for the pace
            "SELECT count(*) FROM outbox WHERE topic = 'home_stale' AND sent_at IS NULL"
            " AND claimed_by IS NULL AND next_attempt_at > created_at"
        ).fetchone()[0]
        first.wait_until(lambda: (n := paced()) and n == owed())  # none left claimed
    assert asked in buttons(homes(fake)[ANN])  # stale when the server died

    with start_server(tmp_path, world, fake.base_url) as second:
        second.wait_until(lambda: asked not in buttons(homes(fake)[ANN]), within=30)
        second.wait_until(lambda: "approved by" in words(homes(fake)[EVE]))
        second.wait_until(lambda: owed() == 0)
        db.close()
