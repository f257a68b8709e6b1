"""`signoff approvals cancel-cool-off` and `signoff approvals undo` (issue 42.6), each a real
`signoff` process on one SQLite file: someone who is not an approver is refused (exit 1,
nothing changed); an approver cancels the call in its cool-off (the seat provider never hears
of it); a second cancel, and an undo of a call that never ran, are too late. Each says what
happened for a person (a table and a line, never a dict's repr); an undo of a call that ran
compensates it once."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from support import SUPPORT
from support.helpers import SIGNOFF
from support.helpers import clean_env
from support.helpers import run_text

Signoff = Callable[..., tuple[int, str]]
"""`signoff(*argv)`: a real `signoff` process's exit code and its output, stdout then stderr."""


def seat_cli(tmp_path: Path, agent: str, tool_policy: str) -> tuple[Signoff, Path]:
    """`signoff` on a SQLite file in `tmp_path` running `agent` of
    tests/support/cool_off_agents.py, U0BOB its approver and `tool_policy` its tool's table;
    and the seat provider's log, which exists once the provider heard of a call."""
    config = f'agents = ["cool_off_agents:{agent}"]\n[policies.default]\napprovers = ["U0BOB"]\n'
    (tmp_path / "signoff.toml").write_text(config + tool_policy, "utf-8")
    seats = tmp_path / "seats.log"
    env = clean_env("SIGNOFF_", "SLACK_") | {
        "SIGNOFF_DATABASE_URL": f"sqlite:///{tmp_path / 'signoff.db'}",
        "SIGNOFF_TEST_SEATS": str(seats),
        "PYTHONPATH": os.pathsep.join([str(SUPPORT), os.environ.get("PYTHONPATH", "")]),
    }

    def signoff(*argv: str) -> tuple[int, str]:
        done = run_text([SIGNOFF, *argv], cwd=tmp_path, env=env, timeout=120)
        return done.returncode, done.stdout + done.stderr

    return signoff, seats


def test_cancel_and_undo_from_the_cli(tmp_path: Path) -> None:
    seat_policy = '[policies.tools.hold_seat]\ncool_off = "1h"\nundo_for = "1h"\n'
    signoff, seats = seat_cli(tmp_path, "seat_agent", seat_policy)
    assert signoff("runs", "start", "seat-agent", "Hold 12A", "--requested-by", "U0RILEY")[0] == 0
    code, listed = signoff("approvals", "list", "--json")
    assert code == 0, listed
    approval_id = json.loads(listed)[0]["id"]
    code, said = signoff("approvals", "decide", approval_id, "approve", "--by", "U0BOB")
    assert code == 0, said
    assert "approved: the call waits out its cool-off until" in said  # not "waiting_approval"
    assert f"signoff approvals cancel-cool-off {approval_id} --by" in said
    assert "cool-off until" in signoff("approvals", "list")[1]
    run_id = json.loads(signoff("runs", "list", "--json")[1])[0]["id"]
    for shown in (signoff("runs", "show", run_id)[1], signoff("runs", "list")[1]):
        assert "ready to resume" not in shown  # nothing may resume it until the cool-off ends
        assert "waits out its cool-off until" in " ".join(shown.split()), shown

    code, said = signoff("approvals", "cancel-cool-off", approval_id, "--by", "U0EVE")
    assert code == 1
    assert "U0EVE may not cancel cool off approval" in said
    assert "nothing changed" in said

    code, said = signoff("approvals", "cancel-cool-off", approval_id, "--by", "U0BOB")
    assert code == 0, said
    assert "cool-off cancelled by U0BOB" in said  # a table and a line, not a dict's repr
    assert "the call never runs; run" in said
    assert "'cool_off':" not in said
    listed = json.loads(signoff("approvals", "list", "--json")[1])
    assert listed[0]["cool_off"] == "cancelled"
    assert not seats.exists()  # the seat provider never heard of the call

    code, said = signoff("approvals", "cancel-cool-off", approval_id, "--by", "U0BOB")
    assert code == 1
    assert "it was cancelled already by U0BOB; nothing changed" in said
    code, said = signoff("approvals", "undo", approval_id, "--by", "U0BOB")
    assert code == 1
    assert "has not run" in said
    assert not seats.exists()


def test_undo_from_the_cli_tells_what_it_compensated(tmp_path: Path) -> None:
    signoff, seats = seat_cli(
        tmp_path, "booking_agent", '[policies.tools.book_seat]\nundo_for = "1h"\n'
    )
    started = signoff("runs", "start", "booking-agent", "Book 14C", "--requested-by", "U0RILEY")
    assert started[0] == 0, started[1]
    approval_id = json.loads(signoff("approvals", "list", "--json")[1])[0]["id"]
    assert signoff("approvals", "decide", approval_id, "approve", "--by", "U0BOB")[0] == 0
    assert "undo until" in signoff("approvals", "list")[1]

    down = Path(f"{seats}.down")  # the seat provider is down: the release fails
    down.touch()
    code, said = signoff("approvals", "undo", approval_id, "--by", "U0BOB")
    assert code == 1, said
    flat = " ".join(said.split())
    assert f"approval {approval_id} is not undone" in flat
    assert "the seat provider is down" in flat
    assert f"approval {approval_id} undone by" not in flat
    listed = " ".join(signoff("approvals", "list")[1].split())
    assert "undo failed" in listed
    assert "undone by" not in listed
    assert json.loads(signoff("approvals", "list", "--json")[1])[0]["undone_by"] is None
    assert seats.read_text().splitlines() == ["hold 14C"]
    down.unlink()  # back: the undo is tried again

    code, said = signoff("approvals", "undo", approval_id, "--by", "U0BOB")
    assert code == 0, said
    assert f"approval {approval_id} undone by U0BOB" in said
    assert "compensated" in said
    assert "book_seat" in said
    assert "'compensated':" not in said  # not a dict's repr
    assert "undone by U0BOB" in signoff("approvals", "list")[1]
    assert seats.read_text().splitlines() == ["hold 14C", "release 14C"]
