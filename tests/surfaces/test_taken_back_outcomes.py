"""Taken back, said so everywhere (issues 40.1, 42.6): against a real `signoff serve` and the
local fake Slack, a run whose approved `hold_seat` was cancelled in its cool-off, and one
whose `book_seat` ran and was then undone, each answered "Done." all the same; neither reads
as done, nor shows a check mark, in the card's thread, on the card, in `signoff runs show`,
in the console's run or in the API's run view."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support import SUPPORT
from support.cool_off_agents import SEATS
from support.cool_off_agents import provider_calls
from support.helpers import SIGNOFF
from support.helpers import run_text
from support.run_outcomes import CHECK
from support.run_outcomes import card_saying
from support.run_outcomes import first_card
from support.run_outcomes import thread_note
from support.slack_harness import APPROVALS
from support.slack_harness import BOB
from support.slack_harness import FakeSlackProcess
from support.slack_harness import SlackServer
from support.slack_harness import card_click
from support.slack_harness import environment
from support.slack_harness import start_server

from bot.slack.actions import Action

CANCELLED, UNDONE, GOING = "seat-cancelled", "seat-undone", "seat-undone-going"
POLICY = f"""
[policies.tools.hold_seat]
channel = "{APPROVALS}"
approvers = ["{BOB}"]
cool_off = "1h"

[policies.tools.book_seat]
channel = "{APPROVALS}"
approvers = ["{BOB}"]
undo_for = "1h"
"""
OUTCOMES = {CANCELLED: "cancelled", UNDONE: "undone", GOING: "undone"}


@pytest.fixture
def agents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv(SEATS, str(tmp_path / "seats.log"))
    return {
        "SIGNOFF_AGENTS": "cool_off_agents:seat_agent,cool_off_agents:booking_agent,"
        "cool_off_agents:two_seats_agent",
        "PYTHONPATH": os.pathsep.join([str(SUPPORT), os.environ.get("PYTHONPATH", "")]),
        SEATS: str(tmp_path / "seats.log"),
    }


@dataclass(frozen=True)
class Served:
    """`signoff serve` with the seat agents and `POLICY`, its fake Slack, its folder, and the
    environment the CLI reads the same database with."""

    folder: Path
    fake: FakeSlackProcess
    server: SlackServer
    env: dict[str, str]


@pytest.fixture
def served(
    tmp_path: Path, world: Path, fake: FakeSlackProcess, agents: dict[str, str]
) -> Iterator[Served]:
    env = environment(tmp_path, world, 0, fake.base_url) | agents
    with start_server(tmp_path, world, fake.base_url, extra=agents, policy=POLICY) as running:
        yield Served(tmp_path, fake, running, env)


def test_a_call_cancelled_in_its_cool_off_or_undone_is_no_run_done_on_any_surface(
    served: Served,
) -> None:
    cards = {
        CANCELLED: approve_then(served, CANCELLED, "seat-agent", Action.CANCEL_COOL_OFF),
        UNDONE: approve_then(served, UNDONE, "booking-agent", Action.UNDO),
    }
    # 12A never ran; 14C ran, then was released (the undo runs after the click's ack)
    served.server.wait_until(lambda: provider_calls() == ["hold 14C", "release 14C"])

    for run_id in (CANCELLED, UNDONE):
        reads_taken_back(served, cards, run_id)


def test_a_call_undone_while_its_run_goes_on_leaves_no_run_done_on_any_surface(
    served: Served,
) -> None:
    """14C is booked, then undone while the run waits on 14D's approval; 14D is approved and
    the run answers "Done.": it ended after the undo, and reads undone all the same."""
    fake, server = served.fake, served.server
    server.start_run(GOING, "Book two seats", agent="two-seats-agent")
    first = server.wait_until(lambda: first_card(fake, GOING))
    status, _, _ = server.slack(card_click(Action.APPROVE.value, first, user=BOB))
    assert status == 200
    second = server.wait_until(lambda: nth_card(fake, GOING, 1))
    assert server.run(GOING)["status"] == "waiting_approval"
    server.wait_until(lambda: offering(fake, first, Action.UNDO))
    status, _, _ = server.slack(card_click(Action.UNDO.value, first, user=BOB))
    assert status == 200
    server.wait_until(lambda: provider_calls() == ["hold 14C", "release 14C"])
    assert server.run(GOING)["status"] == "waiting_approval"  # going on: not marked yet

    status, _, _ = server.slack(card_click(Action.APPROVE.value, second, user=BOB))
    assert status == 200
    server.wait_until(lambda: server.run(GOING)["status"] == "done")
    assert provider_calls() == ["hold 14C", "release 14C", "hold 14D"]

    reads_taken_back(served, {GOING: first}, GOING)


def reads_taken_back(served: Served, cards: dict[str, Any], run_id: str) -> None:
    """The run reads its outcome, not done, in the thread, on the card, in the CLI, the
    console and the API."""
    fake, server = served.fake, served.server
    outcome = OUTCOMES[run_id]
    note = server.wait_until(lambda: ended_note(fake, server, cards, run_id))
    assert CHECK not in note
    server.wait_until(lambda: card_saying(fake, cards[run_id], note))

    shown = run_text([SIGNOFF, "runs", "show", run_id], cwd=served.folder, env=served.env)
    assert shown.returncode == 0, shown.stderr
    assert re.search(rf"│ status +│ {outcome}\b", shown.stdout), shown.stdout

    view = server.run(run_id)
    assert view["outcome"] == outcome, view
    status, console = server.api("GET", f"/v1/console/runs/{run_id}")
    assert status == 200, console
    assert console["run"]["outcome"] == outcome
    assert console["timeline"][-1]["outcome"] == outcome


def approve_then(served: Served, run_id: str, agent: str, then: Action) -> dict[str, Any]:
    """Start `agent`, approve its card as Bob, then click `then` (Cancel or Undo) once the
    card offers it; the card."""
    fake, server = served.fake, served.server
    server.start_run(run_id, "Hold a seat", agent=agent)
    card = server.wait_until(lambda: first_card(fake, run_id))
    status, _, _ = server.slack(card_click(Action.APPROVE.value, card, user=BOB))
    assert status == 200
    server.wait_until(lambda: offering(fake, card, then))
    if then == Action.UNDO:  # offered once the call is claimed; undoable once it completed
        server.wait_until(lambda: server.run(run_id)["status"] == "done")
    status, _, _ = server.slack(card_click(then.value, card, user=BOB))
    assert status == 200
    server.wait_until(lambda: server.run(run_id)["status"] == "done")
    return card


def nth_card(fake: FakeSlackProcess, run_id: str, n: int) -> dict[str, Any] | None:
    """The run's `n`th card (0 first), once posted."""
    cards = [c for c in fake.cards() if c["metadata"]["event_payload"].get("run_id") == run_id]
    return cards[n] if len(cards) > n else None


def offering(fake: FakeSlackProcess, card: dict[str, Any], action: Action) -> bool:
    now = next(c for c in fake.cards() if c["ts"] == card["ts"])
    return action.value in str(now["blocks"])


def ended_note(
    fake: FakeSlackProcess, server: SlackServer, cards: dict[str, Any], run_id: str
) -> str | None:
    """The thread's latest note on how the run ended, once it names the outcome."""
    note = thread_note(fake, server, cards[run_id], run_id)
    return note if f": {OUTCOMES[run_id]}" in note else None
