"""Issue 19, point 1: an order is refunded once, whatever a failure or a retry does.

- a retried `signoff runs start` (no `--run-id`) finds the run the first attempt made;
- a failure while creating a run leaves no run, and one after it exists names the run;
- two runs refunding one order refund it once at the provider (the refund is keyed by the
  order), and the second approval says "possible duplicate of run X" on the Slack card, in
  `signoff approvals list` and in the API's approval view.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from support.helpers import AUTH
from support.helpers import SIGNOFF
from support.helpers import Api
from support.helpers import clean_env
from support.helpers import run_text

from bot.slack.cards import approval_message
from examples import world as example_world
from runtime import Runtime
from store import Store
from store import errors
from store.records import Checkpoint
from store.records import Message
from store.records import Run
from store.records import utcnow
from store.sqlite import SqliteStore

TASK = "Refund order E1"


def signoff(db: Path, world_db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = clean_env("SIGNOFF_", "SLACK_", drop=("COLUMNS", "LINES"))
    env |= {
        "SIGNOFF_DATABASE_URL": f"sqlite:///{db}",
        "SIGNOFF_WORLD_DB": str(world_db),
        "COLUMNS": "250",
    }
    return run_text([SIGNOFF, *args], cwd=db.parent, env=env)


def run_ids(db: Path) -> list[str]:
    with closing(sqlite3.connect(db)) as conn:
        return [row[0] for row in conn.execute("SELECT id FROM runs ORDER BY id")]


def fail_on(db: Path, table: str, when: str = "1") -> None:
    """Inject a write error: every insert into `table` matching `when` fails, as a full disk
    would make it fail."""
    with closing(sqlite3.connect(db)) as conn:
        conn.execute(
            f"CREATE TRIGGER inject_failure BEFORE INSERT ON {table} WHEN {when} "
            "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
        )
        conn.commit()


def heal(db: Path) -> None:
    with closing(sqlite3.connect(db)) as conn:
        conn.execute("DROP TRIGGER inject_failure")
        conn.commit()


def test_a_retried_start_without_run_id_resumes_the_first_run(tmp_path: Path) -> None:
    db, world_db = tmp_path / "signoff.db", tmp_path / "world.db"

    first = signoff(db, world_db, "runs", "start", "refund-agent", TASK)
    again = signoff(db, world_db, "runs", "start", "refund-agent", TASK)

    assert first.returncode == 0, first.stderr
    assert again.returncode == 0, again.stderr
    [run_id] = run_ids(db)
    assert run_id.startswith("refund-agent-")
    assert run_id in first.stdout
    assert f"resumed existing run {run_id}" in again.stdout
    assert "resumed" not in first.stdout
    # Another requester, or an explicit id, is another run.
    other = signoff(db, world_db, "runs", "start", "refund-agent", TASK, "--requested-by", "U0B")
    named = signoff(db, world_db, "runs", "start", "refund-agent", TASK, "--run-id", "mine")
    assert other.returncode == 0, other.stderr
    assert named.returncode == 0, named.stderr
    assert len(run_ids(db)) == 3
    assert "mine" in run_ids(db)


def test_a_start_that_fails_at_creation_leaves_no_run_and_a_retry_makes_one(
    tmp_path: Path,
) -> None:
    db, world_db = tmp_path / "signoff.db", tmp_path / "world.db"
    assert signoff(db, world_db, "db", "migrate").returncode == 0
    fail_on(db, "checkpoints")  # the run's first checkpoint: the run row went in before it

    failed = signoff(db, world_db, "runs", "start", "refund-agent", TASK)

    assert failed.returncode == 1
    assert "disk is full" in failed.stderr
    assert run_ids(db) == []  # the command failed and changed nothing
    heal(db)
    retried = signoff(db, world_db, "runs", "start", "refund-agent", TASK)
    assert retried.returncode == 0, retried.stderr
    assert "resumed" not in retried.stdout
    assert len(run_ids(db)) == 1


def test_a_start_that_fails_after_creating_the_run_names_it_and_how_to_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The disk fills up after the run was created: the command fails, naming the run and
    how to continue it; the retry resumes that run."""
    db, world_db = tmp_path / "signoff.db", tmp_path / "world.db"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SIGNOFF_DATABASE_URL", f"sqlite:///{db}")
    monkeypatch.setenv("SIGNOFF_WORLD_DB", str(world_db))

    async def disk_full(*args: Any, **kwargs: Any) -> Any:
        raise errors.DatabaseError("sqlite: database or disk is full")

    with monkeypatch.context() as patch:
        patch.setattr(SqliteStore, "commit", disk_full)  # every step's write fails
        failed = run_main(monkeypatch, "runs", "start", "refund-agent", TASK)
    err = capsys.readouterr().err

    assert failed == 1
    [run_id] = run_ids(db)
    assert "disk is full" in err
    assert f"run {run_id} exists" in err
    assert f"signoff runs resume {run_id}" in err
    retried = signoff(db, world_db, "runs", "start", "refund-agent", TASK)
    assert retried.returncode == 0, retried.stderr
    assert f"resumed existing run {run_id}" in retried.stdout
    assert run_ids(db) == [run_id]
    assert "waiting_approval" in retried.stdout


def run_main(monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    from bot.cli import main

    monkeypatch.setattr("sys.argv", ["signoff", *args])
    with pytest.raises(SystemExit) as exited:
        main()
    return int(exited.value.code or 0)


async def test_run_creation_and_its_first_checkpoint_are_one_transaction(
    store: Store, db_path: Path
) -> None:
    now = utcnow()
    run = Run(id="r-atomic", agent="refund-agent", task=TASK, lineage_id="r-atomic",
              created_at=now, updated_at=now)  # fmt: skip
    first = Checkpoint.opening(run.id, [Message(role="user", content=TASK)], created_at=now)
    fail_on(db_path, "checkpoints")

    with pytest.raises(errors.StoreError):
        await store.create_run(run, first)

    with pytest.raises(errors.NotFound):
        await store.get_run(run.id)
    heal(db_path)
    await store.create_run(run, first)  # the id was never taken
    assert (await store.get_run(run.id)).id == run.id


async def test_two_runs_refunding_one_order_refund_it_once_and_the_second_asks_as_a_duplicate(
    make_api: Callable[..., Any], db_path: Path, world: Path
) -> None:
    api: Api = await make_api()
    rt: Runtime = api.rt
    first = await rt.start("refund-agent", TASK, run_id="r-first", requested_by="U0REQ")
    second = await rt.start("refund-agent", TASK, run_id="r-retry", requested_by="U0REQ")
    [asked_first] = await rt.approvals(first)
    [asked_second] = await rt.approvals(second)

    # The second request names the first run, on every surface.
    assert asked_first.duplicate_of is None
    assert asked_second.duplicate_of == first
    card = json.dumps(approval_message(asked_second, await rt.get(second)))
    assert "possible duplicate of run `r-first`" in card
    assert "possible duplicate" not in json.dumps(approval_message(asked_first, None))
    response = await api.client.get(f"/v1/approvals/{asked_second.id}", headers=AUTH)
    assert response.status == 200
    assert (await response.json())["duplicate_of"] == first
    listed = signoff(db_path, world, "approvals", "list", "--run", second)
    assert listed.returncode == 0, listed.stderr
    assert "possible duplicate of run r-first" in listed.stdout
    shown = signoff(db_path, world, "approvals", "list", "--json")
    assert {a["run_id"]: a["duplicate_of"] for a in json.loads(shown.stdout)} == {
        first: None,
        second: first,
    }

    # Both approved: the provider refunds the order once.
    await rt.decide(asked_first.id, "approved", by="U0BOB")
    await rt.decide(asked_second.id, "approved", by="U0BOB")
    refunds = [p for p in example_world.payments() if p[0] == "refund"]
    assert [(kind, ref) for kind, ref, _, _ in refunds] == [("refund", "E1")]
    assert (await rt.get(first)).status == "done"
    assert (await rt.get(second)).status == "done"

    # A third request after the first was approved still says so (recently approved).
    third = await rt.start("refund-agent", TASK, run_id="r-third", requested_by="U0REQ")
    assert (await rt.approvals(third))[0].duplicate_of in {first, second}


async def test_a_refund_a_rollback_reversed_can_be_issued_again_and_is_no_duplicate(
    make_api: Callable[..., Any], world: Path
) -> None:
    rt: Runtime = (await make_api()).rt
    first = await rt.start("refund-agent", TASK, run_id="r-first", requested_by="U0REQ")
    [asked] = await rt.approvals(first)
    await rt.decide(asked.id, "approved", by="U0BOB")
    await rt.rollback(first, 1)  # the refund is reversed

    again = await rt.start("refund-agent", TASK, run_id="r-again", requested_by="U0REQ")
    [asked_again] = await rt.approvals(again)
    assert asked_again.duplicate_of is None  # what it would duplicate was undone
    await rt.decide(asked_again.id, "approved", by="U0BOB")

    moves = [(kind, amount) for kind, _, amount, _ in example_world.payments()]
    refunded = [amount for kind, amount in moves if kind == "refund"]
    assert len(refunded) == 2
    assert ("refund_reversal", -refunded[0]) in moves
    assert sum(a for k, a in moves if k.startswith("refund")) == refunded[1]  # net: one refund
