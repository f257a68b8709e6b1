"""The `signoff` console script, run as a real subprocess on a real SQLite file.

A fixture prepares runs in-process once (parked, done, to roll back, to cancel, an old one
to prune); each test gets its own copy of that database and world, so no test depends on
another having run, and runs the commands it checks. Every error case also checks that the
database and the world did not change.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from support.helpers import SIGNOFF
from support.helpers import clean_env
from support.helpers import run_text

from examples import world
from examples.refund_agent import agent as refund_agent
from runtime import Runtime
from store import Store
from store import open_store
from store.records import utcnow

# one worker runs the module, so the prepared database is built once
pytestmark = pytest.mark.xdist_group("cli")


@dataclass
class Cli:
    cwd: Path
    env: dict[str, str]
    db: Path

    def __call__(self, *args: str, stdin: str | None = None, **env: str) -> Result:
        done = run_text(
            [SIGNOFF, *args],
            cwd=self.cwd,
            env=self.env | env,
            stdin=stdin if stdin is not None else "",
        )
        return Result(done.returncode, done.stdout, done.stderr)

    def fingerprint(self) -> tuple[str, list[Any], list[Any]]:
        """Everything in the database and the world, to show a command changed nothing."""
        with closing(sqlite3.connect(self.db)) as conn:
            dump = "\n".join(conn.iterdump())
        return dump, world.payments(), world.emails()

    def inspect(self, what: str, *args: Any, **kwargs: Any) -> Any:
        """Call one Store method on a fresh connection to the module's database."""

        async def run() -> Any:
            store = await open_store(f"sqlite:///{self.db}")
            try:
                return await getattr(store, what)(*args, **kwargs)
            finally:
                await store.close()

        return asyncio.run(run())


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        assert self.code == 0, self.err
        return json.loads(self.out)

    def refused(self) -> str:
        """Assert a non-zero exit with a one-line reason on stderr; return the reason."""
        assert self.code != 0, self.out
        assert "Traceback" not in self.err
        lines = self.err.strip().splitlines()
        assert len(lines) == 1, self.err
        return lines[0]


async def prepare(store: Store) -> dict[str, str]:
    """The runs the tests operate on, in every state the CLI must show."""
    rt = Runtime(store, [refund_agent], worker_id="prepare")
    for run_id, order in [
        ("r-parked", "1001"),
        ("r-done", "1002"),
        ("r-rollback", "1003"),
        ("r-cancel", "1004"),
    ]:
        await rt.start("refund-agent", f"Refund order {order}", run_id=run_id)
    ids = {}
    for run_id in ("r-done", "r-rollback"):
        [approval] = await rt.approvals(run_id)
        await rt.decide(approval.id, "approved", by="U0BOSS")
        ids[run_id] = approval.id
    [parked] = await rt.approvals("r-parked")
    ids["r-parked"] = parked.id
    ids["generated"] = await rt.start("refund-agent", "Refund order 1006")  # run_ + 20 hex
    long_ago = utcnow() - timedelta(days=60)
    old = Runtime(store, [refund_agent], worker_id="prepare", clock=lambda: long_ago)
    await old.start("refund-agent", "Say hello", run_id="r-old")
    return ids


@dataclass
class Prepared:
    home: Path
    ids: dict[str, str]


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Prepared:
    """The prepared database and world, built once and copied for each test."""
    home = tmp_path_factory.mktemp("cli-prepared")

    async def run() -> dict[str, str]:
        store = await open_store(f"sqlite:///{home / 'signoff.db'}")
        try:
            return await prepare(store)
        finally:
            await store.close()

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SIGNOFF_WORLD_DB", str(home / "world.db"))
        ids = asyncio.run(run())
    return Prepared(home, ids)


@pytest.fixture
def cli(prepared: Prepared, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Cli:
    for file in prepared.home.iterdir():  # closed stores: no WAL left beside the files
        shutil.copy(file, tmp_path / file.name)
    db, world_db = tmp_path / "signoff.db", tmp_path / "world.db"
    env = clean_env("SIGNOFF_", "SLACK_", drop=("COLUMNS", "LINES"))
    env |= {"SIGNOFF_DATABASE_URL": f"sqlite:///{db}", "SIGNOFF_WORLD_DB": str(world_db)}
    monkeypatch.setenv("SIGNOFF_WORLD_DB", str(world_db))
    return Cli(tmp_path, env, db)


@pytest.fixture
def approval_ids(prepared: Prepared) -> dict[str, str]:
    return prepared.ids


@pytest.fixture
def started(cli: Cli) -> Result:
    return cli("runs", "start", "refund-agent", "Refund order 1005", "--run-id", "r-cli", "--json")


def refunds(order: str) -> list[int]:
    return [p[2] for p in world.payments() if p[1] == order and p[0].startswith("refund")]


# help and the database


def test_help_lists_the_commands(cli: Cli) -> None:
    result = cli("--help")
    assert result.code == 0
    for command in ("serve", "runs", "approvals", "db"):
        assert command in result.out


def test_db_migrate_names_each_migration_and_twice_is_idempotent(cli: Cli, tmp_path: Path) -> None:
    fresh = {"SIGNOFF_DATABASE_URL": f"sqlite:///{tmp_path / 'fresh.db'}"}
    first = cli("db", "migrate", **fresh)
    second = cli("db", "migrate", **fresh)
    assert first.code == 0, first.err
    *applied, said = first.out.strip().splitlines()
    version = len(applied)
    assert said == f"schema version {version} (was 0)"
    assert applied[0].startswith("applied 0001 initial: safe while older workers run (")
    assert applied[12].startswith("applied 0013 lease_epoch: NOT safe while older workers run")
    assert second.code == 0, second.err
    assert second.out.strip() == f"schema version {version} (up to date)"
    assert cli("db", "migrate", "--json", **fresh).json() == {
        "version": version,
        "was": version,
        "applied": [],
        "stepping_aside": [],
        "leases_taken": [],
        "authority_filled": 0,
    }


# runs


def test_runs_start_parks_for_approval(started: Result) -> None:
    run = started.json()
    assert run["id"] == "r-cli"
    assert run["status"] == "waiting_approval"
    assert run["usage"]["steps"] == 2


def test_approvals_decide_approves_and_the_run_finishes(cli: Cli, started: Result) -> None:
    [pending] = cli.inspect("list_approvals", run_id="r-cli")
    decided = cli("approvals", "decide", pending.id, "approve", "--by", "U0BOSS", "--json").json()
    assert decided["state"] == "approved"
    assert decided["decided_by"] == "U0BOSS"
    assert cli.inspect("get_run", "r-cli").status == "done"
    assert len(refunds("1005")) == 1


def test_runs_list_json_has_every_run(cli: Cli, approval_ids: dict[str, str]) -> None:
    found = {r["id"]: r["status"] for r in cli("runs", "list", "--json").json()}
    assert found["r-parked"] == "waiting_approval"
    assert found["r-done"] == "done"
    assert found["r-old"] == "done"


def test_runs_list_filters_by_status(cli: Cli, approval_ids: dict[str, str]) -> None:
    found = cli("runs", "list", "--status", "done", "--json").json()
    assert found
    assert {r["status"] for r in found} == {"done"}
    assert "r-parked" not in {r["id"] for r in found}


def test_runs_list_table_shows_whole_ids(cli: Cli, approval_ids: dict[str, str]) -> None:
    result = cli("runs", "list", "--status", "waiting_approval")
    assert result.code == 0, result.err
    assert "r-parked" in result.out
    assert approval_ids["generated"] in result.out  # an id cut to "run_0a1b…" cannot be used


def test_runs_show_json_has_state_usage_budget_approvals_effects(
    cli: Cli, approval_ids: dict[str, str]
) -> None:
    shown = cli("runs", "show", "r-parked", "--json").json()
    assert shown["status"] == "waiting_approval"
    assert shown["usage"]["steps"] == 2
    assert shown["budget"]["max_steps"] == 12
    assert [(a["tool"], a["state"]) for a in shown["approvals"]] == [("issue_refund", "pending")]
    assert [(e["tool"], e["status"]) for e in shown["effects"]] == [("lookup_order", "completed")]


def test_runs_show_table_has_usage_against_budget(cli: Cli, approval_ids: dict[str, str]) -> None:
    result = cli("runs", "show", "r-parked")
    assert result.code == 0, result.err
    assert "steps 2/12" in result.out
    assert approval_ids["r-parked"] in result.out
    assert "lookup_order" in result.out


def test_runs_history_has_one_entry_per_checkpoint(cli: Cli, approval_ids: dict[str, str]) -> None:
    history = cli("runs", "history", "r-done", "--json").json()
    assert [c["seq"] for c in history] == list(range(len(history)))
    steps = [c["step"] for c in history]
    assert steps == sorted(steps)
    assert history[-1]["status"] == "done"
    table = cli("runs", "history", "r-done")
    assert table.code == 0, table.err
    assert "issue_refund" in table.out
    assert "send_email" in table.out


# approvals


def test_approvals_list_pending_has_only_pending(cli: Cli, approval_ids: dict[str, str]) -> None:
    found = cli("approvals", "list", "--pending", "--json").json()
    assert {a["state"] for a in found} == {"pending"}
    ids = {a["id"] for a in found}
    assert approval_ids["r-parked"] in ids
    assert approval_ids["r-done"] not in ids


def test_approvals_list_table_shows_whole_ids(cli: Cli, approval_ids: dict[str, str]) -> None:
    result = cli("approvals", "list")
    assert result.code == 0, result.err
    assert approval_ids["r-parked"] in result.out  # what `approvals decide` needs
    assert approval_ids["r-done"] in result.out


# fork, rollback, resume, cancel, prune


def test_dry_run_fork_lists_what_happened_and_touches_nothing(
    cli: Cli, approval_ids: dict[str, str]
) -> None:
    before = world.payments(), world.emails()
    forked = cli("runs", "fork", "r-done", "--from-step", "2", "--dry-run", "--json").json()
    assert forked["id"] != "r-done"
    assert forked["parent_id"] == "r-done"
    assert forked["dry_run"] is True
    assert "send_email" in {e["tool"] for e in forked["already_happened"]}
    assert (world.payments(), world.emails()) == before


def test_fork_never_redoes_what_happened_and_shows_the_new_id(
    cli: Cli, approval_ids: dict[str, str]
) -> None:
    before = world.payments(), world.emails()
    result = cli("runs", "fork", "r-done", "--from-step", "2")
    assert result.code == 0, result.err
    assert "Already happened" in result.out
    forks = [r for r in cli.inspect("list_runs", None) if r.parent_id == "r-done" and not r.dry_run]
    [fork] = forks
    assert fork.status == "done"
    assert fork.id in result.out
    assert (world.payments(), world.emails()) == before


def test_rollback_asks_and_no_aborts_with_nothing_changed(
    cli: Cli, approval_ids: dict[str, str]
) -> None:
    before = cli.fingerprint()
    result = cli("runs", "rollback", "r-rollback", "--to-step", "1", "--json", stdin="n\n")
    assert result.code != 0
    assert "Roll run r-rollback back to step 1?" in result.err  # the question and
    assert result.err.strip().endswith("aborted")  # the refusal both go to stderr,
    assert result.out.strip() == ""  # since stdout is only ever the answer, for scripts
    assert cli.fingerprint() == before


@pytest.fixture
def rolled_back(cli: Cli) -> Result:
    return cli("runs", "rollback", "r-rollback", "--to-step", "1", "--yes", "--json")


def test_rollback_yes_compensates_pages_and_reports(cli: Cli, rolled_back: Result) -> None:
    report = rolled_back.json()
    assert report["run_id"] == "r-rollback"
    assert len(report["compensated"]) == 1  # the refund
    assert report["paged"]  # the e-mail (and the charge, if any)
    amount = refunds("1003")[0]
    assert refunds("1003")[:2] == [amount, -amount]
    effects = cli.inspect("list_effects", "r-rollback")
    [refund] = [e for e in effects if e.tool == "issue_refund"]
    assert refund.compensated_by is not None


def test_resume_after_rollback_then_approval_refunds_again(cli: Cli, rolled_back: Result) -> None:
    resumed = cli("runs", "resume", "r-rollback", "--json").json()
    assert resumed["status"] == "waiting_approval"
    [pending] = cli.inspect("list_approvals", run_id="r-rollback", state="pending")
    assert [a["id"] for a in resumed["pending_approvals"]] == [pending.id]
    again = cli("runs", "resume", "r-rollback")  # still waiting: it says how to decide
    assert f"signoff approvals decide {pending.id} approve" in again.out
    asyncio.run(_decide(cli, pending.id))
    assert cli.inspect("get_run", "r-rollback").status == "done"
    # refunded, reversed by the rollback, and refunded again once a human approved it again
    assert sum(refunds("1003")) > 0, world.payments()


async def _decide(cli: Cli, approval_id: str) -> None:
    store = await open_store(f"sqlite:///{cli.db}")
    try:
        await Runtime(store, [refund_agent], worker_id="t").decide(
            approval_id, "approved", by="U0BOSS"
        )
    finally:
        await store.close()


def test_cancel_declines_pending_and_cancelling_again_is_refused(
    cli: Cli, approval_ids: dict[str, str]
) -> None:
    cancelled = cli("runs", "cancel", "r-cancel", "--reason", "customer withdrew", "--json")
    assert cancelled.json()["status"] == "cancelled"
    [approval] = cli.inspect("list_approvals", run_id="r-cancel")
    assert approval.state == "declined"
    before = cli.fingerprint()
    again = cli("runs", "cancel", "r-cancel")
    assert "already cancelled" in again.refused()
    assert cli.fingerprint() == before


def test_prune_removes_only_old_finished_runs(cli: Cli, approval_ids: dict[str, str]) -> None:
    assert cli("runs", "prune", "--older-than", "30d", "--yes", "--json").json() == {"pruned": 1}
    remaining = {r.id for r in cli.inspect("list_runs", None)}
    assert "r-old" not in remaining
    assert {"r-parked", "r-done", "r-rollback"} <= remaining


# refusals: non-zero, one line on stderr, nothing changed

REFUSALS = [
    (("runs", "show", "nope"), "no run 'nope'"),
    (("runs", "history", "nope"), "no run 'nope'"),
    (("runs", "resume", "nope"), "no run 'nope'"),
    (("runs", "fork", "r-done", "--from-step", "99999999999999999999"), "--from-step"),
    (("runs", "start", "refund-agent", "x", "--run-id", "a b/../c"), "is not 1-128 letters"),
    (("runs", "start", "refund-agent", "x", "--run-id", "r" * 129), "is not 1-128 letters"),
    (("runs", "cancel", "nope"), "no run 'nope'"),
    (("runs", "rollback", "nope", "--to-step", "1", "--yes"), "no run 'nope'"),
    (("runs", "list", "--status", "bogus"), "unknown status 'bogus'"),
    (("runs", "list", "--status", "rolled_back"), "a rolled-back run is failed, with the stop"),
    (("runs", "fork", "r-done", "--from-step", "-1"), "--from-step"),
    (("runs", "fork", "r-done", "--from-step", "99"), "no step 99"),
    (("runs", "fork", "r-done"), "Missing option '--from-step'"),
    (("runs", "prune", "--older-than", "soon"), "'soon' is not a duration"),
    (("runs", "prune", "--older-than", "30", "--yes"), "'30' is not a duration with a unit"),
    (("runs", "prune", "--older-than", "99999999d", "--yes"), "before any date"),
    (("runs", "rollback", "r-done", "--to-step", "99", "--yes"), "goes back, not forward"),
    (("approvals", "decide", "ap_nope", "approve", "--by", "U0BOSS"), "no approval 'ap_nope'"),
    (("runs", "frobnicate"), "frobnicate"),
    (("runs", "start", "nobody", "Refund order 1"), "no agent 'nobody'"),
    (("--config", "missing.toml", "runs", "list"), "missing.toml"),
]


@pytest.mark.parametrize(("args", "reason"), REFUSALS, ids=[" ".join(a) for a, _ in REFUSALS])
def test_refusals_give_one_line_and_change_nothing(
    cli: Cli, approval_ids: dict[str, str], args: tuple[str, ...], reason: str
) -> None:
    before = cli.fingerprint()
    assert reason in cli(*args).refused()
    assert cli.fingerprint() == before


def test_deciding_twice_is_refused_with_who_decided(cli: Cli, approval_ids: dict[str, str]) -> None:
    before = cli.fingerprint()
    again = cli("approvals", "decide", approval_ids["r-done"], "decline", "--by", "U0OTHER")
    assert "Already approved by U0BOSS" in again.refused()
    assert cli.fingerprint() == before


def test_bad_decision_word_is_refused(cli: Cli, approval_ids: dict[str, str]) -> None:
    before = cli.fingerprint()
    result = cli("approvals", "decide", approval_ids["r-parked"], "maybe", "--by", "U0BOSS")
    assert "approve" in result.refused()
    assert cli.fingerprint() == before
