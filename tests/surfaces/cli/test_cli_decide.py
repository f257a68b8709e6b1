"""Deciding from the console script: where the run resumes, what the approver sees (the
arguments, a quorum's progress, nothing an agent wrote read as terminal control), editing.

Each test has its own database and world; `signoff` runs as a real subprocess.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import Awaitable
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import TypeVar

import pytest
from support import SUPPORT
from support.helpers import clean_env

from bot import words
from examples import world
from examples.refund_agent import agent as refund_agent
from runtime import Runtime
from store import open_store

from .test_cli import Cli
from .test_cli import Result
from .test_cli import refunds

T = TypeVar("T")
ELSEWHERE = {"SIGNOFF_AGENTS": "cli_agents:shipper"}
"""A shell where the refund agent is not configured (another agent is)."""
BOSS = ("--by", "U0BOSS")
EDIT = ("--edit", '{"order_id": "7", "amount_cents": 100}')


def fresh_cli(home: Path, monkeypatch: pytest.MonkeyPatch) -> Cli:
    """The console script on a database and a world of its own in `home` (not created yet);
    `cli_agents` importable, as agents configured through SIGNOFF_AGENTS are."""
    db, world_db = home / "signoff.db", home / "world.db"
    env = clean_env("SIGNOFF_", "SLACK_", drop=("COLUMNS", "LINES"))
    env |= {
        "SIGNOFF_DATABASE_URL": f"sqlite:///{db}",
        "SIGNOFF_WORLD_DB": str(world_db),
        "PYTHONPATH": os.pathsep.join([str(SUPPORT), env.get("PYTHONPATH", "")]),
    }
    monkeypatch.setenv("SIGNOFF_WORLD_DB", str(world_db))
    return Cli(home, env, db)


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Cli:
    return fresh_cli(tmp_path, monkeypatch)


def in_process(cli: Cli, work: Callable[[Runtime], Awaitable[T]]) -> T:
    """Run `work` on a Runtime with the refund agent, on the test's database."""

    async def run() -> T:
        store = await open_store(f"sqlite:///{cli.db}")
        try:
            return await work(Runtime(store, [refund_agent], worker_id="test"))
        finally:
            await store.close()

    return asyncio.run(run())


def parked(cli: Cli) -> str:
    """Start run r1 (refund order 7) from the CLI; return the id of the approval it waits for."""
    started = cli("runs", "start", "refund-agent", "Refund order 7", "--run-id", "r1")
    assert started.code == 0, started.err
    [pending] = cli.inspect("list_approvals", run_id="r1", state="pending")
    return str(pending.id)


def decide(cli: Cli, *args: str, **env: str) -> Result:
    return cli("approvals", "decide", *args, **env)


def row(output: str, needle: str) -> str:
    [line] = [line for line in output.splitlines() if needle in line]
    return line


# 1: a decision where the run's agent is not loaded


def test_a_decision_where_the_agent_is_not_loaded_is_recorded_and_the_run_shows_ready(
    cli: Cli,
) -> None:
    approval = parked(cli)

    decided = decide(cli, approval, "approve", *BOSS, **ELSEWHERE)

    assert decided.code == 0, decided.err
    assert decided.err == ""  # no traceback, no warning
    line = row(decided.out, "resumes")
    assert "'refund-agent' is loaded" in line
    assert "signoff serve" in line
    assert "signoff runs resume r1" in line
    [recorded] = cli.inspect("list_approvals", run_id="r1")
    assert (recorded.state, recorded.decided_by) == ("approved", "U0BOSS")
    assert refunds("7") == []  # nothing ran here
    for command in (("runs", "list"), ("runs", "show", "r1")):
        shown = cli(*command, **ELSEWHERE)
        assert words.READY_TO_RESUME in shown.out, shown.out

    resumed = cli("runs", "resume", "r1", "--json").json()  # where the agent is loaded

    assert resumed["status"] == "done"
    assert len(refunds("7")) == 1


def test_a_decision_under_json_keeps_stdout_json_and_says_where_on_stderr(cli: Cli) -> None:
    approval = parked(cli)

    decided = decide(cli, approval, "decline", *BOSS, "--reason", "no", "--json", **ELSEWHERE)

    assert decided.json()["state"] == "declined"
    assert decided.json()["resumed"] is False
    assert "signoff runs resume r1" in decided.err
    assert len(decided.err.strip().splitlines()) == 1


# 9: what approvers see


QUORUM = "[policies.tools.issue_refund]\nrequired_approvals = 2\n"


def test_a_quorum_shows_who_approved_and_the_arguments_with_the_amount(cli: Cli) -> None:
    (cli.cwd / "signoff.toml").write_text(QUORUM)
    approval = parked(cli)
    amount = world.order("7")["amount_cents"]

    first = decide(cli, approval, "approve", "--by", "U0ANN")

    assert first.code == 0, first.err
    assert "1 of 2: U0ANN" in first.out
    assert "waits for 1 more approver" in first.out
    listed = row(cli("approvals", "list").out, approval)
    shown = row(cli("runs", "show", "r1").out, approval)
    for line in (listed, shown):
        assert "pending, 1 of 2: U0ANN" in line
        assert f'issue_refund(order_id="7", amount_cents={amount}, restocking_fee_cents=0)' in line


HOSTILE = "[bold]loud[/bold] \x1b[2J\u202eevil \x1b]8;;https://evil.example\x1b\\bank\x1b]8;;\x1b\\"


def test_what_an_agent_wrote_reaches_the_terminal_inert(cli: Cli) -> None:
    cli("runs", "start", "refund-agent", f"Refund order 7 {HOSTILE}", "--run-id", "r1")
    in_process(cli, lambda rt: rt.request_approval("wire", {"note": HOSTILE, "cents": 5000}))

    for command in (("runs", "list"), ("runs", "show", "r1"), ("approvals", "list")):
        shown = cli(*command)
        assert shown.code == 0, shown.err
        assert "\x1b" not in shown.out
        assert "\u202e" not in shown.out
        assert "\\x1b" in shown.out or "\\u001b" in shown.out  # written out: text, or JSON
        assert "[bold]loud[/bold]" in shown.out  # literal, not read as markup
    assert "cents=5000" in cli("approvals", "list").out


def test_long_arguments_are_cut_so_every_name_shows(cli: Cli) -> None:
    cli("db", "migrate")
    args = {"note": "n" * 5000, "amount_cents": 5000}
    in_process(cli, lambda rt: rt.request_approval("wire", args))

    line = row(cli("approvals", "list").out, "wire(")

    assert "amount_cents=5000" in line
    assert len(line) < 400


# 10: editing the arguments


EDITABLE = "[policies.tools.issue_refund]\nallow_edit = true\n"
EDIT_REFUSALS = [
    (("--edit", '{"amount_cents": 5'), "--edit: not valid JSON"),
    (("--edit", "[100]"), "--edit: give a JSON object"),
    (("--edit", '{"order_id": "7", "amount_cents": NaN}'), "NaN"),
    (("--edit", '{"order_id": "7", "amount_cents": "lots"}'), "amount_cents"),
]


@pytest.mark.parametrize(("args", "reason"), EDIT_REFUSALS, ids=[r for _, r in EDIT_REFUSALS])
def test_a_refused_edit_is_one_line_and_changes_nothing(
    cli: Cli, args: tuple[str, ...], reason: str
) -> None:
    (cli.cwd / "signoff.toml").write_text(EDITABLE)
    approval = parked(cli)
    before = cli.fingerprint()

    result = cli("approvals", "decide", approval, "approve", *BOSS, *args)

    assert reason in result.refused()
    assert cli.fingerprint() == before


def test_an_edit_is_judged_by_the_policy_the_approval_was_asked_under(cli: Cli) -> None:
    """Asked where approvers may edit, an edit is approved from a CLI whose own file (empty:
    no edits) would refuse it: the approval carries the authority it was asked under."""
    (cli.cwd / "signoff.toml").write_text(EDITABLE)
    (cli.cwd / "none.toml").write_text("")
    approval = parked(cli)

    result = cli("--config", "none.toml", "approvals", "decide", approval, "approve", *BOSS, *EDIT)

    assert result.code == 0, result.err
    [decided] = cli.inspect("list_approvals", run_id="r1")
    assert decided.approved_args == {
        "order_id": "7",
        "amount_cents": 100,
        "restocking_fee_cents": 0,
    }


def test_an_edit_is_refused_where_the_tool_cannot_check_it(cli: Cli) -> None:
    (cli.cwd / "signoff.toml").write_text(EDITABLE)
    approval = parked(cli)
    before = cli.fingerprint()

    result = decide(cli, approval, "approve", *BOSS, *EDIT, **ELSEWHERE)

    assert "not loaded here" in result.refused()
    assert cli.fingerprint() == before


def test_an_edited_call_runs_with_the_approved_arguments(cli: Cli) -> None:
    (cli.cwd / "signoff.toml").write_text(EDITABLE)
    approval = parked(cli)

    edited = decide(cli, approval, "approve", *BOSS, *EDIT)

    assert edited.code == 0, edited.err
    flat = " ".join(edited.out.replace("│", " ").split())  # the table may wrap the cell
    assert "approved as" in flat
    assert "amount_cents=100" in flat
    assert "is now done" in edited.out
    [recorded] = cli.inspect("list_approvals", run_id="r1")
    assert recorded.approved_args == {
        "order_id": "7",
        "amount_cents": 100,
        "restocking_fee_cents": 0,
    }
    assert refunds("7") == [100]


def test_db_migrate_fills_in_the_authority_of_approvals_asked_before_it_was_kept(
    cli: Cli,
) -> None:
    (cli.cwd / "signoff.toml").write_text('[policies.tools.issue_refund]\napprovers = ["U0BOSS"]\n')
    approval = parked(cli)
    with closing(sqlite3.connect(cli.db)) as conn, conn:  # as an approval from before 0022
        conn.execute("UPDATE approvals SET authority = NULL")

    filled = cli("db", "migrate")
    assert filled.code == 0, filled.err
    assert "filled in the authority of 1 pending approval(s) from the policy in force" in (
        filled.out
    )
    [recorded] = cli.inspect("list_approvals", run_id="r1")
    assert recorded.id == approval
    assert recorded.authority.filled
    assert recorded.authority.settings["approvers"] == ["U0BOSS"]
    assert "filled in" not in cli("db", "migrate").out  # once


def test_ask_is_a_question_back_to_the_agent(cli: Cli) -> None:
    """`ask` needs the question; then the call does not run, and the refund agent (which
    does not answer questions) goes on as its script says, nothing refunded."""
    approval_id = parked(cli)
    unsaid = decide(cli, approval_id, "ask", *BOSS)
    assert unsaid.code != 0
    assert "ask needs the question" in unsaid.err
    asked = decide(cli, approval_id, "ask", *BOSS, "--reason", "Why this amount?")
    assert asked.code == 0, asked.err
    (done,) = cli.inspect("list_approvals", run_id="r1", state="declined")
    assert (done.question, done.decided_by) == ("Why this amount?", "U0BOSS")
    assert words.approval_state(done) == words.ASKED
    assert world.payments() == []
