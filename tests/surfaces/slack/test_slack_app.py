"""The Slack app end to end: `signoff serve` as a real process, the fake Slack as another, and
clicks and commands signed exactly as Slack signs them."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from support.helpers import SIGNOFF
from support.helpers import run_text
from support.slack_harness import ANN
from support.slack_harness import APPROVALS
from support.slack_harness import BOB
from support.slack_harness import EVE
from support.slack_harness import FakeSlackProcess
from support.slack_harness import SlackServer
from support.slack_harness import approval_id_of
from support.slack_harness import button
from support.slack_harness import environment
from support.slack_harness import slash
from support.slack_harness import submission

from examples import world as outside


def card_for(fake: FakeSlackProcess, server: SlackServer, count: int = 1) -> list[dict[str, Any]]:
    return list(server.wait_until(lambda: (c := fake.cards()) and len(c) >= count and c))


def parked(fake: FakeSlackProcess, server: SlackServer, run_id: str) -> tuple[dict[str, Any], str]:
    """Start the refund run `run_id`; its card, the only one posted, and its approval id."""
    server.start_run(run_id)
    [card] = card_for(fake, server)
    return card, approval_id_of(card)


def refunds() -> list[tuple[str, str, int, str]]:
    return [p for p in outside.payments() if p[0] == "refund"]


def assert_nothing_refunded(server: SlackServer, run_id: str) -> None:
    """The run still waits for its approval and no refund was made."""
    assert server.run(run_id)["status"] == "waiting_approval"
    assert refunds() == []


def test_a_parked_run_posts_a_card_and_an_approve_click_resumes_it_once(
    fake: FakeSlackProcess, server: SlackServer
) -> None:
    card, approval_id = parked(fake, server, "order-4471")
    actions = [b for b in card["blocks"] if b["type"] == "actions"]  # approve, edit, ask, decline
    assert [e["value"] for e in actions[0]["elements"]] == [
        approval_id
    ] * 4  # approve, edit, ask, decline

    status, body, seconds = server.slack(button("approve", approval_id, user=BOB, ts=card["ts"]))

    assert status == 200, body
    assert seconds < 3
    server.wait_until(lambda: server.run("order-4471")["status"] == "done")
    assert len(refunds()) == 1
    updated = server.wait_until(
        lambda: (
            (m := fake.cards()[0]) and m["edited"] and "Approved" in json.dumps(m["blocks"]) and m
        )
    )
    assert not [b for b in updated["blocks"] if b["type"] == "actions"]
    # The thread reads in the order things happened: the decision, then the run's end.
    thread = server.wait_until(lambda: len(r := fake.replies(APPROVALS, card["ts"])) >= 2 and r)
    assert "approved" in thread[0]["text"].lower()
    assert "order-4471" in thread[1]["text"]
    # A second click, after the fact, changes nothing and says who decided.
    status, _, _ = server.slack(button("approve", approval_id, user=ANN, ts=card["ts"]))
    assert status == 200
    told = server.wait_until(lambda: fake.told(ANN))
    assert BOB in told[0]["text"]
    assert "Already approved" in told[0]["text"]
    assert len(refunds()) == 1


def test_decline_asks_for_a_reason_that_reaches_the_model(
    fake: FakeSlackProcess, server: SlackServer
) -> None:
    card, approval_id = parked(fake, server, "order-decline")

    status, _, _ = server.slack(button("decline", approval_id, user=BOB, ts=card["ts"]))
    assert status == 200
    [opened] = server.wait_until(fake.modals)
    assert opened["view"]["callback_id"] == "decline_reason"
    reason = "customer is not eligible"
    status, body, _ = server.slack(
        submission("decline_reason", approval_id, {"reason": reason}, user=BOB)
    )

    assert status == 200, body
    run = server.wait_until(
        lambda: (r := server.run("order-decline"))["status"] in ("done", "failed") and r
    )
    assert refunds() == []
    status, approval = server.api("GET", f"/v1/approvals/{approval_id}")
    assert approval["state"] == "declined"
    assert approval["reason"] == reason
    assert run["status"] == "done"
    note = server.wait_until(lambda: fake.replies(APPROVALS, card["ts"]))
    assert any("declined" in m["text"].lower() for m in note)
    # the decided card keeps the step it was asked at, though the run went on past it
    asked = card["blocks"][1]["text"]["text"]
    assert "step 2" in asked
    [final] = server.wait_until(
        lambda: (c := fake.cards()) and "Declined by" in str(c[0]["blocks"]) and c
    )
    assert final["blocks"][1]["text"]["text"] == asked
    assert run["step"] > 2


def test_edit_approves_the_edited_amount_and_the_tool_runs_with_it(
    fake: FakeSlackProcess, server: SlackServer
) -> None:
    card, approval_id = parked(fake, server, "order-edit")
    server.slack(button("edit", approval_id, user=ANN, ts=card["ts"]))
    [opened] = server.wait_until(fake.modals)
    proposed = json.loads(opened["view"]["blocks"][-1]["element"]["initial_value"])
    edited = {**proposed, "amount_cents": proposed["amount_cents"] - 500}

    bad, body, _ = server.slack(
        submission("edit_args", approval_id, {"args": '{"amount_cents": "lots"}'}, user=ANN)
    )
    assert bad == 200
    assert b"errors" in body
    status, body, _ = server.slack(
        submission("edit_args", approval_id, {"args": json.dumps(edited)}, user=ANN)
    )

    assert status == 200, body
    server.wait_until(lambda: server.run("order-edit")["status"] == "done")
    assert [p[2] for p in refunds()] == [edited["amount_cents"]]


def test_refusals_are_ephemeral_and_change_nothing(
    fake: FakeSlackProcess, server: SlackServer
) -> None:
    card, approval_id = parked(fake, server, "order-refused")

    server.slack(button("approve", approval_id, user=EVE, ts=card["ts"]))
    server.slack(button("approve", "ap_no_such_approval", user=BOB, ts=card["ts"]))

    told = server.wait_until(lambda: len(e := fake.ephemerals()) >= 2 and e)
    texts = {e["user"]: e["text"] for e in told}
    assert "not an approver" in texts[EVE]
    assert "There is no approval" in texts[BOB]
    assert_nothing_refunded(server, "order-refused")


def test_a_wrong_signature_or_a_stale_timestamp_gets_401_and_changes_nothing(
    fake: FakeSlackProcess, server: SlackServer
) -> None:
    card, approval_id = parked(fake, server, "order-forged")
    click = button("approve", approval_id, user=BOB, ts=card["ts"])

    forged, _, _ = server.slack(click, secret="not-the-secret")
    stale, _, _ = server.slack(click, timestamp=int(time.time()) - 6 * 60)

    assert (forged, stale) == (401, 401)
    time.sleep(0.5)
    assert_nothing_refunded(server, "order-forged")


def test_two_approvers_racing_one_wins_the_other_is_told_who(
    fake: FakeSlackProcess, server: SlackServer
) -> None:
    card, approval_id = parked(fake, server, "order-race")
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(4) as pool:
        clicks = [
            pool.submit(server.slack, button("approve", approval_id, user=who, ts=card["ts"]))
            for who in (BOB, ANN, BOB, ANN)
        ]
        assert [c.result()[0] for c in clicks] == [200] * 4

    server.wait_until(lambda: server.run("order-race")["status"] == "done")
    told = server.wait_until(lambda: len(e := fake.ephemerals()) >= 3 and e)
    assert all("Already approved" in e["text"] for e in told)
    assert len(refunds()) == 1


def test_runs_slash_command_answers_ephemerally(
    fake: FakeSlackProcess, server: SlackServer
) -> None:
    server.start_run("order-slash")
    card_for(fake, server)

    answers = {}
    for text, who in [
        ("status order-slash", BOB),
        ("pending", BOB),
        ("list", BOB),
        ("history order-slash", BOB),
        ("status nope", BOB),
        ("frobnicate", BOB),
        ("cancel order-slash", EVE),
    ]:
        status, body, seconds = server.slack(slash(text, user=who))
        assert status == 200, body
        assert seconds < 3
        answers[text] = json.loads(body)

    assert all(a["response_type"] == "ephemeral" for a in answers.values())
    assert "order-slash" in json.dumps(answers["status order-slash"])
    assert "order-slash" in json.dumps(answers["pending"])
    assert "nope" in answers["status nope"]["text"]
    assert "help" in json.dumps(answers["frobnicate"]).lower()
    assert server.run("order-slash")["status"] == "waiting_approval"  # Eve may not cancel

    status, body, _ = server.slack(slash("cancel order-slash", user=BOB))
    assert status == 200
    server.wait_until(lambda: server.run("order-slash")["status"] == "cancelled")


def test_serve_with_slack_stops_cleanly_on_sigterm(
    fake: FakeSlackProcess, server: SlackServer
) -> None:
    server.start_run("order-stop")
    card_for(fake, server)

    assert server.stop() == 0
    assert "Traceback" not in server.log.read_text()


def test_missing_slack_settings_are_one_line_naming_the_variable(
    tmp_path: Path, world: Path
) -> None:
    env = environment(tmp_path, world, 0, "http://127.0.0.1:9/api/")
    del env["SLACK_BOT_TOKEN"]
    result = run_text([SIGNOFF, "serve"], cwd=tmp_path, env=env, timeout=30)

    assert result.returncode != 0
    assert "SLACK_BOT_TOKEN" in result.stderr
    assert "SIGNOFF_API_ONLY" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "signoff.db").exists()  # refused before touching anything
