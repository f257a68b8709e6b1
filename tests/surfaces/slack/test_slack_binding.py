"""Issue 25 through the real surfaces: `signoff serve` in its own process, the fake Slack in
another, clicks signed as Slack signs them, the HTTP API and the CLI.

- two runs refund one order for 25.00 and 20.00: one refund; the second card says what the
  first run did and offers "Approve as separate"; a plain Approve click is refused and
  changes nothing; "Approve as separate" makes exactly one more refund, of 20.00;
- an edit in the Slack modal: the provider gets the edited amount, and the card, the thread,
  `/runs status`, the API and `signoff runs show` all say proposed, approved and executed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support.helpers import SIGNOFF
from support.helpers import run_text
from support.slack_harness import ANN
from support.slack_harness import APPROVALS
from support.slack_harness import BOB
from support.slack_harness import FakeSlackProcess
from support.slack_harness import SlackServer
from support.slack_harness import approval_id_of
from support.slack_harness import button
from support.slack_harness import buttons_of
from support.slack_harness import card_click
from support.slack_harness import environment
from support.slack_harness import slash
from support.slack_harness import submission

from examples import world as outside

ORDER = "4471"


def start(server: SlackServer, run_id: str, dollars: int) -> None:
    server.start_run(run_id, f"Refund order {ORDER} for ${dollars}")


def card_of(fake: FakeSlackProcess, server: SlackServer, run_id: str) -> dict[str, Any]:
    def found() -> dict[str, Any] | None:
        mine = [c for c in fake.cards() if c["metadata"]["event_payload"]["run_id"] == run_id]
        return mine[0] if mine else None

    return dict(server.wait_until(found))


def refunded() -> list[int]:
    return [cents for kind, _, cents, _ in outside.payments() if kind == "refund"]


def done(server: SlackServer, run_id: str) -> None:
    server.wait_until(lambda: server.run(run_id)["status"] == "done")


def test_a_second_refund_for_another_amount_is_asked_as_a_conflict_and_approved_as_separate(
    fake: FakeSlackProcess, server: SlackServer
) -> None:
    start(server, "run-a", 25)
    first = card_of(fake, server, "run-a")
    server.slack(card_click("approve", first, user=BOB))
    done(server, "run-a")
    start(server, "run-c", 20)
    card = card_of(fake, server, "run-c")
    approval_id = approval_id_of(card)

    shown = json.dumps(card)
    assert "was already done with amount\\u2060_\\u2060cents 2500 by run `run-a`" in shown
    assert f"(approved by <@{BOB}> at <!date^" in shown
    assert "this run asks amount\\u2060_\\u2060cents 2000" in shown
    assert buttons_of(card) == [
        "approve_separate",
        "edit",
        "ask",
        "decline",
    ]
    status, view = server.api("GET", f"/v1/approvals/{approval_id}")
    assert status == 200
    assert view["conflict"]["run_id"] == "run-a"

    # A plain Approve (a stale card, a hand-made request) is refused and changes nothing.
    server.slack(button("approve", approval_id, user=ANN, ts=card["ts"]))
    [told] = server.wait_until(fake.ephemerals)
    assert "Not approved, nothing was done" in told["text"]
    assert server.run("run-c")["status"] == "waiting_approval"
    assert refunded() == [2500]

    status, body, seconds = server.slack(
        button("approve_separate", approval_id, user=ANN, ts=card["ts"])
    )

    assert status == 200, body
    assert seconds < 3
    done(server, "run-c")
    assert refunded() == [2500, 2000]
    updated = server.wait_until(
        lambda: "approved as a separate" in json.dumps(card_of(fake, server, "run-c"))
    )
    assert updated
    status, view = server.api("GET", f"/v1/approvals/{approval_id}")
    assert (view["state"], view["key_suffix"]) == ("approved", approval_id)
    status, run = server.api("GET", "/v1/runs/run-c")
    [call] = run["calls"]
    assert (call["separate"], call["executed"]["amount_cents"]) == (True, 2000)
    assert call["key"].endswith(f"~separate:{approval_id}")


def test_an_edit_in_slack_runs_the_edited_amount_and_every_surface_says_so(
    fake: FakeSlackProcess, server: SlackServer, tmp_path: Path, world: Path
) -> None:
    start(server, "run-e", 25)
    card = card_of(fake, server, "run-e")
    approval_id = approval_id_of(card)
    edited = {"order_id": ORDER, "amount_cents": 2000, "restocking_fee_cents": 0}

    status, body, _ = server.slack(
        submission("edit_args", approval_id, {"args": json.dumps(edited)}, user=ANN)
    )

    assert status == 200, body
    done(server, "run-e")
    assert refunded() == [2000]
    final = server.wait_until(
        lambda: "(asked 2500)" in json.dumps(c := card_of(fake, server, "run-e")) and c
    )
    # the header reads as the refund tool declares
    assert final["blocks"][0]["text"]["text"] == f"Refund $20.00 on order {ORDER}"
    assert f"edited by <@{ANN}>: amount\u2060_\u2060cents 2000 (asked 2500)" in json.dumps(
        final, ensure_ascii=False
    )
    notes = server.wait_until(
        lambda: [m for m in fake.replies(APPROVALS, card["ts"]) if "who edited it" in m["text"]]
    )
    assert "amount\u2060_\u2060cents 2000 (asked 2500)" in notes[0]["text"]

    _, reply, _ = server.slack(slash("status run-e", user=BOB))
    said = json.dumps(json.loads(reply), ensure_ascii=False)
    assert "proposed amount\u2060_\u2060cents 2500" in said
    assert "approved amount\u2060_\u2060cents 2000 by" in said
    assert "executed as approved (completed)" in said

    status, view = server.api("GET", f"/v1/approvals/{approval_id}")
    assert (view["args"]["amount_cents"], view["approved_args"]["amount_cents"]) == (2500, 2000)
    assert view["edited"] is True
    assert view["args_digest"] != view["approved_digest"]
    _, run = server.api("GET", "/v1/runs/run-e")
    [call] = run["calls"]
    assert [call[k]["amount_cents"] for k in ("proposed", "approved", "executed")] == [
        2500,
        2000,
        2000,
    ]

    env = environment(tmp_path, world, 0, fake.base_url) | {"COLUMNS": "250"}
    shown = run_text([SIGNOFF, "runs", "show", "run-e"], cwd=tmp_path, env=env)  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "proposed amount_cents 2500" in shown.stdout
    assert f"approved amount_cents 2000 by {ANN}" in shown.stdout
    assert "executed as approved (completed)" in shown.stdout
