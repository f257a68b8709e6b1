"""What a new user meets in the console script: which database a command uses (and none
made by a read), statuses that tell the truth, help without type noise, the API's shapes
and limits, and resuming with raised limits. `signoff` runs as a real subprocess."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from bot.json_views import run_view
from bot.settle import settle_commands
from bot.views import pages_table
from runtime import Runtime
from store import Budget
from store import Page
from store import Run

from .test_cli import Cli
from .test_cli_decide import fresh_cli
from .test_cli_decide import in_process
from .test_cli_decide import parked
from .test_cli_decide import row


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Cli:
    return fresh_cli(tmp_path, monkeypatch)


# 13: which database


NEED_A_DATABASE = [
    ("runs", "list"),
    ("runs", "show", "r1"),
    ("runs", "history", "r1"),
    ("runs", "resume", "r1"),
    ("approvals", "list"),
    ("approvals", "decide", "ap_1", "approve", "--by", "U0BOSS"),
    ("pages", "list"),
]


@pytest.mark.parametrize("command", NEED_A_DATABASE, ids=" ".join)
def test_a_command_on_a_missing_database_names_it_and_creates_nothing(
    cli: Cli, command: tuple[str, ...]
) -> None:
    reason = cli(*command).refused()

    assert f"no database at {cli.db}" in reason
    assert not cli.db.exists()
    assert list(cli.cwd.iterdir()) == []


def test_a_missing_database_beside_signoff_devs_says_where_its_runs_are(cli: Cli) -> None:
    """A second terminal that missed the export line `signoff dev` printed looks in
    ./signoff.db: the error points at signoff-dev.db beside it."""
    assert "signoff dev" not in cli("runs", "list").refused()
    dev = cli.db.with_name("signoff-dev.db")
    dev.write_bytes(b"")

    reason = cli("runs", "list").refused()

    assert f"no database at {cli.db}" in reason
    assert f"the runs of `signoff dev` are in {dev}" in reason
    assert "export SIGNOFF_DATABASE_URL=" in reason
    assert not cli.db.exists()


def test_an_empty_approvals_list_says_so_and_where(cli: Cli) -> None:
    assert cli("db", "migrate").code == 0

    listed = cli("approvals", "list")
    pending = cli("approvals", "list", "--pending")

    assert listed.code == 0, listed.err
    assert listed.out.strip() == f"no approvals in {cli.db}"
    assert pending.out.strip() == f"no pending approvals in {cli.db}"
    assert cli("approvals", "list", "--json").json() == []


def test_verbose_and_the_list_footer_name_the_database_and_times_say_utc(cli: Cli) -> None:
    parked(cli)

    listed = cli("-v", "runs", "list")

    assert listed.code == 0, listed.err
    assert f"database: {cli.db}" in listed.err
    assert f"1 run(s) in {cli.db}" in listed.out
    assert "created (UTC)" in listed.out
    assert "deadline (UTC)" in cli("approvals", "list").out
    assert f"database: {cli.db}" in cli("-v", "approvals", "list").err


# 15: dry runs and rollbacks


def test_dry_run_forks_and_rolled_back_runs_show_as_such(cli: Cli) -> None:
    approval = parked(cli)
    cli("approvals", "decide", approval, "approve", "--by", "U0BOSS")
    fork = cli("runs", "fork", "r1", "--from-step", "2", "--dry-run", "--json").json()
    cli("runs", "rollback", "r1", "--to-step", "1", "--yes")

    listed = cli("runs", "list").out
    rolled_back, dry = row(listed, "r1 "), row(listed, fork["id"])

    assert "rolled back" in rolled_back
    assert "failed" not in rolled_back
    assert "dry run" in dry
    assert "rolled back" in row(cli("runs", "show", "r1").out, "status")
    assert "dry run:" in row(cli("runs", "show", fork["id"]).out, "status")


# 16: help, the API's shapes and limits


@pytest.mark.parametrize(
    "command", [(), ("runs", "fork"), ("approvals", "list"), ("db", "migrate")]
)
def test_help_shows_flags_without_a_type(cli: Cli, command: tuple[str, ...]) -> None:
    shown = cli(*command, "--help")

    assert shown.code == 0, shown.err
    assert "--help" in shown.out
    assert "<bool>" not in shown.out


def test_runs_start_json_shows_pending_approvals_as_the_http_api_does(cli: Cli) -> None:
    started = cli("runs", "start", "refund-agent", "Refund order 7", "--run-id", "r1", "--json")

    async def api_view(rt: Runtime) -> object:
        return await run_view(rt, await rt.get("r1"))

    assert started.json() == in_process(cli, api_view)
    assert started.json()["pending_approvals"][0]["args"]["order_id"] == "7"


TOO_LONG = [
    (("runs", "start", "refund-agent", "Refund order 7 " + "x" * 20_000), "TASK"),
    (("runs", "start", "refund-agent", "Refund order 7", "--requested-by", "U" * 65), "64"),
    (("approvals", "decide", "ap_1", "approve", "--by", "U" * 10_000), "--by"),
    (("approvals", "decide", "ap_1", "approve", "--by", "U0BOSS", "--reason", "r" * 3_001), "3000"),
    (("runs", "resolve", "r1", "c1", "--happened", "--by", "U" * 10_000), "--by"),
    (("pages", "ack", "p1", "--by", "<!channel>"), "--by"),
]


@pytest.mark.parametrize(("command", "reason"), TOO_LONG, ids=[r for _, r in TOO_LONG])
def test_text_is_limited_as_the_http_api_limits_it(
    cli: Cli, command: tuple[str, ...], reason: str
) -> None:
    assert reason in cli(*command).refused()
    assert not cli.db.exists()


# 17: resuming with raised limits


def test_runs_resume_raises_the_token_and_cost_limits(cli: Cli) -> None:
    tight = Budget(max_steps=12, max_input_tokens=1, max_output_tokens=1)

    async def start(rt: Runtime) -> Run:
        run_id = await rt.start("refund-agent", "Refund order 7", budget=tight, run_id="r1")
        return await rt.get(run_id)

    assert in_process(cli, start).stop_reason == "token_budget"
    raised = ("--max-input-tokens", "100000", "--max-output-tokens", "100000", "--max-cost", "2.5")

    resumed = cli("runs", "resume", "r1", *raised, "--json").json()

    assert resumed["status"] == "waiting_approval"
    assert resumed["budget"] == {
        "max_steps": 12,
        "max_input_tokens": 100_000,
        "max_output_tokens": 100_000,
        "max_cost": 2.5,
    }
    assert "--max-cost" in cli("runs", "resume", "r1", "--max-cost", "nan").refused()


def test_pages_list_names_the_command_that_settles_each_page() -> None:
    doubt = Page(id="pg1", reason="in_doubt", run_id="r1", call_id="call_3", tool="send_email")
    undone = Page(id="pg2", reason="uncompensatable", run_id="r1", call_id="c4", tool="x")

    assert settle_commands(doubt)[:2] == [
        "signoff runs resolve r1 call_3 --happened --by <you>",
        "signoff runs resolve r1 call_3 --did-not-happen --by <you>",
    ]
    assert settle_commands(undone) == ["signoff runs show r1"]
    console = Console(width=400, record=True)
    console.print(pages_table([doubt, undone]))
    shown = console.export_text()
    assert "signoff runs resolve r1 call_3 --happened --by <you>" in shown
    assert "signoff runs show r1" in shown
