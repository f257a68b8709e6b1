"""Issue 25 from the CLI, each command a real `signoff` process on one SQLite file: a second
refund of an order for another amount is refused as a plain approval (exit 1, the conflict
in words, nothing changed) and approved with `--separate`; `runs show` says what ran."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from examples import world as example_world
from surfaces.test_no_double_refund import signoff


def approval_of(db: Path, world: Path, run_id: str) -> str:
    listed = signoff(db, world, "approvals", "list", "--run", run_id, "--json")
    assert listed.returncode == 0, listed.stderr
    [approval] = json.loads(listed.stdout)
    return str(approval["id"])


def refunded(world: Path) -> list[int]:
    return [cents for kind, _, cents, _ in example_world.payments() if kind == "refund"]


def test_the_cli_refuses_a_plain_approval_of_a_conflict_and_approves_it_as_separate(
    tmp_path: Path, world: Path
) -> None:
    db = tmp_path / "signoff.db"
    started = signoff(db, world, "runs", "start", "refund-agent", "Refund order 4471 for $25",
                      "--run-id", "run-a")  # fmt: skip
    assert started.returncode == 0, started.stderr
    first = approval_of(db, world, "run-a")
    assert (
        signoff(db, world, "approvals", "decide", first, "approve", "--by", "U0ALICE").returncode
        == 0
    )
    again = signoff(db, world, "runs", "start", "refund-agent", "Refund order 4471 for $20",
                    "--run-id", "run-c")  # fmt: skip
    assert again.returncode == 0, again.stderr
    second = approval_of(db, world, "run-c")

    plain = signoff(db, world, "approvals", "decide", second, "approve", "--by", "U0BOB")

    assert plain.returncode == 1
    said = " ".join(plain.stderr.split())
    assert "amount_cents 2500 by run run-a (approved by U0ALICE" in said
    assert "this run asks amount_cents 2000" in said
    assert refunded(world) == [2500]
    separate = signoff(
        db, world, "approvals", "decide", second, "approve", "--by", "U0BOB", "--separate"
    )
    assert separate.returncode == 0, separate.stderr
    assert refunded(world) == [2500, 2000]
    shown = signoff(db, world, "runs", "show", "run-c", "--json")
    [call] = json.loads(shown.stdout)["calls"]
    assert call["separate"] is True
    assert (call["approved"]["amount_cents"], call["executed"]["amount_cents"]) == (2000, 2000)


def test_an_edit_from_the_cli_shows_proposed_approved_and_executed_in_the_audit_export(
    tmp_path: Path, world: Path
) -> None:
    db = tmp_path / "signoff.db"
    (tmp_path / "signoff.toml").write_text("[policies.tools.issue_refund]\nallow_edit = true\n")
    started = signoff(db, world, "runs", "start", "refund-agent", "Refund order 4471 for $25",
                      "--run-id", "run-e")  # fmt: skip
    assert started.returncode == 0, started.stderr
    asked = approval_of(db, world, "run-e")
    edit = json.dumps({"order_id": "4471", "amount_cents": 2000, "restocking_fee_cents": 0})
    renamed = json.dumps({"order_id": "1002", "amount_cents": 2000, "restocking_fee_cents": 0})

    refused = signoff(db, world, "approvals", "decide", asked, "approve", "--by", "U0BOB",
                      "--edit", renamed)  # fmt: skip
    assert refused.returncode == 1
    assert "changes what issue_refund acts on (order_id" in " ".join(refused.stderr.split())
    decided = signoff(db, world, "approvals", "decide", asked, "approve", "--by", "U0BOB",
                      "--edit", edit)  # fmt: skip

    assert decided.returncode == 0, decided.stderr
    assert refunded(world) == [2000]
    exported = signoff(db, world, "audit", "export", "--run", "run-e")
    assert exported.returncode == 0, exported.stderr
    events = [json.loads(line) for line in exported.stdout.splitlines()]
    by_action = {
        e["action"]: e["detail"]
        for e in events
        if e["action"].startswith(("approval_", "effect_completed"))
    }
    assert by_action["approval_requested"]["args"]["amount_cents"] == 2500
    assert by_action["approval_approved"]["edited"] == {
        "amount_cents": {"proposed": 2500, "approved": 2000}
    }
    assert (
        by_action["approval_approved"]["approved_digest"]
        != by_action["approval_approved"]["args_digest"]
    )
    refunds = [
        e["detail"]
        for e in events
        if e["action"] == "effect_completed" and e["detail"]["tool"] == "issue_refund"
    ]
    assert [r["args"]["amount_cents"] for r in refunds] == [2000]


def test_resuming_where_another_model_is_configured_is_refused_and_changes_nothing(
    tmp_path: Path, world: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "signoff.db"
    started = signoff(db, world, "runs", "start", "refund-agent", "Refund order 4471",
                      "--run-id", "run-m")  # fmt: skip
    assert started.returncode == 0, started.stderr
    (tmp_path / "signoff.toml").write_text(
        '[models.refund-agent]\nprovider = "openai"\nmodel = "gpt-test"\n'
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")  # no call is made

    refused = signoff(db, world, "runs", "resume", "run-m")

    assert refused.returncode == 1
    said = " ".join(refused.stderr.split())
    assert "run run-m started on class=ScriptedModel" in said
    assert "configured with class=OpenAIModel, provider=openai, model=gpt-test" in said
    assert "--override-model-by" in said
    shown = signoff(db, world, "runs", "show", "run-m", "--json")
    run = json.loads(shown.stdout)
    assert (run["status"], run["model"]) == ("waiting_approval", {"class": "ScriptedModel"})
