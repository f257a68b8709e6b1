"""Issue 25 from the CLI, each command a real `signoff` process on one SQLite file: a second
refund of an order for another amount is refused as a plain approval (exit 1, the conflict
in words, nothing changed) and approved with `--separate`; `runs show` says what ran."""

from __future__ import annotations

import json
from pathlib import Path

from examples import world as example_world

from .test_no_double_refund import signoff


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
