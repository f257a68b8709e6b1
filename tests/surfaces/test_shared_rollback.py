"""A rollback of a refund another run relies on (issue 40.2), end to end: against a real
`signoff serve` and the local fake Slack, runs A and B each refund order E1, approved in
Slack; the provider refunds once and B relies on A's refund. The console's preview names B;
`signoff runs rollback A` is refused, naming B, and changes nothing (the console's rollback
too, 409); with `--compensate-shared` the refund is reversed, on-call is paged in Slack, B's
thread is told and B's timeline in the console says so."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from support import SUPPORT
from support.helpers import SIGNOFF
from support.helpers import run_text
from support.slack_harness import APPROVALS
from support.slack_harness import BOB
from support.slack_harness import ONCALL
from support.slack_harness import FakeSlackProcess
from support.slack_harness import SlackServer
from support.slack_harness import approval_id_of
from support.slack_harness import button
from support.slack_harness import environment
from support.slack_harness import start_server

from examples import world as outside

TASK = "Refund order E1"


def approved_refund(fake: FakeSlackProcess, server: SlackServer, run_id: str) -> dict[str, Any]:
    """Run `run_id` refunds order E1, approved by Bob in Slack; its card."""
    server.start_run(run_id, TASK, requested_by=f"U0ASK{run_id}")
    card = server.wait_until(
        lambda: next(
            (c for c in fake.cards() if c["metadata"]["event_payload"]["run_id"] == run_id), None
        )
    )
    status, _, _ = server.slack(button("approve", approval_id_of(card), user=BOB, ts=card["ts"]))
    assert status == 200
    server.wait_until(lambda: server.run(run_id)["status"] == "done")
    return dict(card)


def unchanged(server: SlackServer) -> tuple[Any, ...]:
    """What a refused rollback must leave as it was."""
    _, audit = server.api("GET", "/v1/audit?run_id=A")
    return (outside.payments(), server.run("A"), len(audit["events"]))


def test_a_shared_refund_is_rolled_back_only_when_the_operator_says_so(
    tmp_path: Path, world: Path, fake: FakeSlackProcess, server: SlackServer
) -> None:
    approved_refund(fake, server, "A")
    card_b = approved_refund(fake, server, "B")
    assert len([p for p in outside.payments() if p[0] == "refund"]) == 1
    status, preview = server.api("GET", "/v1/console/runs/A/rollback?to_step=1")
    assert status == 200, preview
    [refund] = [line for line in preview["compensate"] if line["tool"] == "issue_refund"]
    assert (refund["relied_on_by"], preview["shared"]) == (["B"], True)
    before = unchanged(server)

    env = environment(tmp_path, world, 0, fake.base_url)
    rollback = [SIGNOFF, "runs", "rollback", "A", "--to-step", "1", "--yes"]
    refused = run_text(rollback, cwd=tmp_path, env=env)
    assert refused.returncode == 1, refused.stdout
    said = " ".join(refused.stderr.split())
    assert "is relied on by run B" in said
    assert "nothing changed" in said
    assert "--compensate-shared" in said
    status, answer = server.api("POST", "/v1/console/runs/A/rollback", {"to_step": 1})
    assert status == 409, answer
    assert list(answer["shared"].values()) == [[["B", refund["call_id"]]]]
    assert unchanged(server) == before

    done = run_text([*rollback, "--compensate-shared", "--json"], cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert refund["call_id"] in report["compensated"]
    assert report["shared"] == {refund["call_id"]: ["B"]}
    assert [p[0] for p in outside.payments()].count("refund_reversal") == 1

    page = server.wait_until(lambda: _page_about(fake, "issue_refund"))
    assert "was undone though other runs rely on it" in json.dumps(page)
    note = server.wait_until(lambda: _note(fake, card_b, "relies on"))
    assert "of run `A`" in note
    assert "was undone by" in note
    _, console = server.api("GET", "/v1/console/runs/B")
    [call] = [c for row in console["timeline"] for c in row["calls"] if c["tool"] == "issue_refund"]
    assert call["relied_on"] == {"run_id": "A", "call_id": refund["call_id"]}
    assert call["undone"]["by_run"] == "A"
    assert "relied_on_effect_undone" in [e["action"] for e in console["events"]]


def _page_about(fake: FakeSlackProcess, tool: str) -> dict[str, Any] | None:
    pages = [m for m in fake.messages(ONCALL) if m["thread_ts"] is None]
    return next((p for p in pages if "other runs rely on it" in json.dumps(p)), None)


def _note(fake: FakeSlackProcess, card: dict[str, Any], words: str) -> str | None:
    return next(
        (m["text"] for m in fake.replies(APPROVALS, card["ts"]) if words in m["text"]), None
    )


def test_the_api_refuses_a_cancel_that_would_undo_an_effect_another_run_relies_on(
    tmp_path: Path, world: Path, fake: FakeSlackProcess
) -> None:
    """Two runs hold room R1 (one key, the same arguments: the hotel's one hold); cancelling
    the first with compensation is a 409 naming the second, until the caller says so."""
    marker = tmp_path / "marker"
    marker.mkdir()
    agents = {
        "SIGNOFF_AGENTS": "cancel_agents:hotel",
        "SIGNOFF_TEST_MARKER": str(marker),
        "PYTHONPATH": os.pathsep.join([str(SUPPORT), os.environ.get("PYTHONPATH", "")]),
    }
    with start_server(tmp_path, world, fake.base_url, extra=agents) as server:
        for run_id in ("A", "B"):
            body = {"agent": "hotel", "task": "Hold R1", "run_id": run_id}
            assert server.api("POST", "/v1/runs", body)[0] == 201
            server.wait_until(lambda run_id=run_id: _in_flight(server, run_id))

        status, refused = server.api("POST", "/v1/runs/A/cancel", {"compensate": True})
        assert status == 409, refused
        assert "is relied on by run B" in refused["error"]
        assert server.run("A")["status"] == "running"  # nothing changed

        body = {"compensate": True, "compensate_shared": True}
        status, view = server.api("POST", "/v1/runs/A/cancel", body)
        assert status == 202, view
        assert "Runs B rely on call_1_1: they are paged for and noted." in view["note"]
        (marker / "release").write_text("go")
        server.wait_until(lambda: _page_about(fake, "hold_at_hotel"))
        assert server.stop() == 0


def _in_flight(server: SlackServer, run_id: str) -> bool:
    """Its hold started (written with the model's reply, step 1)."""
    return int(server.run(run_id)["step"]) >= 1
