"""Issue 25: a SIGKILL between an edited approval and the tool call changes nothing of what
was approved. The first process records the decision (proposed 2500, approved 2000) and is
killed before the run resumes; the next recovers the run: the provider gets 2000, once, and
the ledger, the approval and the audit still say proposed 2500, approved 2000, executed 2000.
A third life finds nothing to do."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

from support.helpers import run_text

from examples import world as outside
from store import Approval
from store import AuditEvent
from store import open_store
from store.digest import args_digest

WORKER = Path(__file__).with_name("edit_worker.py")
PROPOSED = {"order_id": "4471", "amount_cents": 2500, "restocking_fee_cents": 0}
EDITED = {**PROPOSED, "amount_cents": 2000}


def life(db: Path, world_db: Path, phase: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, SIGNOFF_WORLD_DB=str(world_db))
    return run_text([sys.executable, str(WORKER), str(db), phase], env=env)


Rows = list[tuple[int, str | None, str | None]]


async def ledger(db: Path) -> tuple[Rows, Approval, list[AuditEvent]]:
    async with open_store(f"sqlite:///{db}") as store:
        effects = [e for e in await store.list_effects("run-edit") if e.tool == "issue_refund"]
        [approval] = await store.list_approvals(run_id="run-edit")
        events = await store.list_events(run_id="run-edit")
        rows = [(e.args["amount_cents"], e.args_digest, e.asked_digest) for e in effects]
        return rows, approval, events


def test_a_sigkill_between_an_edited_decision_and_the_tool_call_changes_nothing(
    tmp_path: Path, world: Path
) -> None:
    db = tmp_path / "signoff.db"

    killed = life(db, world, "decide")

    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert [p for p in outside.payments() if p[0] == "refund"] == []
    recovered = life(db, world, "recover")
    assert recovered.returncode == 0, recovered.stderr
    assert recovered.stdout.split() == ["done", "answered"]
    again = life(db, world, "recover")
    assert again.returncode == 0, again.stderr

    assert [(k, ref, cents) for k, ref, cents, _ in outside.payments()] == [
        ("refund", "4471", 2000)
    ]
    rows, approval, events = asyncio.run(ledger(db))
    assert rows == [(2000, args_digest(EDITED), args_digest(PROPOSED))]
    assert (approval.args, approval.approved_args) == (PROPOSED, EDITED)
    assert approval.approved_digest == args_digest(EDITED)
    [decided] = [e for e in events if e.action == "approval_approved"]
    assert decided.detail["edited"] == {"amount_cents": {"proposed": 2500, "approved": 2000}}
