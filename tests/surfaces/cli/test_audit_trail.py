"""The audit trail an auditor is handed: a scripted scenario (a request, an edit, a quorum
approval, executions, a rollback, a page and its acknowledgement) exported by the
`signoff audit export` command matches the expected sequence exactly, sensitive arguments
masked; `runs prune` keeps the trail unless `--include-audit`."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from datetime import datetime
from pathlib import Path
from typing import Any

from support.helpers import SIGNOFF
from support.helpers import clean_env
from support.helpers import run_text

from runtime import Agent
from runtime import Policies
from runtime import Policy
from runtime import Runtime
from runtime import ScriptedModel
from runtime import ToolContext
from runtime import tool
from runtime import tool_call
from store import Store
from store.digest import args_digest

IBAN = "DE89370400440532013000"
RESERVE = tool_call("reserve_stock", {"sku": "S1", "qty": 5}, id="c1")
WIRE = tool_call("wire_money", {"account": "ACME", "cents": 900, "iban": IBAN}, id="c2")
received: list[dict[str, Any]] = []


@tool(
    description="Reserve stock.",
    effect="reversible",
    compensate="release_stock",
    requires_approval=True,
)
def reserve_stock(sku: str, qty: int, *, ctx: ToolContext) -> dict[str, Any]:
    return {"reserved": qty}


@tool(description="Release reserved stock.", effect="irreversible", requires_approval=False)
def release_stock(sku: str, qty: int, *, ctx: ToolContext) -> dict[str, Any]:
    return {"released": qty}


@tool(description="Wire money.", effect="irreversible", sensitive=["iban"])
def wire_money(account: str, cents: int, iban: str, *, ctx: ToolContext) -> dict[str, Any]:
    received.append({"account": account, "cents": cents, "iban": iban})
    return {"wired": cents}


POLICIES = Policies(
    tools={
        "reserve_stock": Policy(approvers=("U0BOB",), allow_edit=True),
        "wire_money": Policy(approvers=("U0ANN", "U0BOB"), required_approvals=2),
    }
)


def ops_agent() -> Agent:
    return Agent(
        "ops",
        model=ScriptedModel([RESERVE, WIRE, "Done."]),
        tools=[reserve_stock, release_stock, wire_money],
    )


def export(db_path: Path, *args: str) -> str:
    env = clean_env("SIGNOFF_", "SLACK_")
    env["SIGNOFF_DATABASE_URL"] = f"sqlite:///{db_path}"
    done = run_text([SIGNOFF, "audit", "export", *args], env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


async def scenario(rt: Runtime) -> tuple[str, str, str]:
    run_id = await rt.start("ops", "Reserve and pay", run_id="ops-1", requested_by="U0REQ")
    [reserve] = await rt.approvals(run_id, state="pending")
    await rt.decide(reserve.id, "approved", by="U0BOB", args={"sku": "S1", "qty": 3})
    [wire] = await rt.approvals(run_id, state="pending")
    await rt.decide(wire.id, "approved", by="U0ANN")
    await rt.decide(wire.id, "approved", by="U0BOB")
    assert (await rt.get(run_id)).status == "done"
    await rt.rollback(run_id, to_step=0, by="U0OPS")
    [page] = await rt.store.list_pages()
    await rt.acknowledge_page(page.id, by="U0ONCALL")
    return reserve.id, wire.id, page.id


async def test_the_export_of_a_scripted_scenario_is_the_expected_sequence(
    make_runtime: Any, db_path: Path
) -> None:
    received.clear()
    rt = make_runtime([ops_agent()], policies=POLICIES)
    reserve, wire, page = await scenario(rt)
    assert received == [{"account": "ACME", "cents": 900, "iban": IBAN}]  # the tool got it whole

    lines = export(db_path, "--since", "1d").splitlines()
    records = [json.loads(line) for line in lines]
    ids = [r.pop("id") for r in records]
    times = [datetime.fromisoformat(r.pop("at")) for r in records]
    chain = [(r.pop("prev_hash"), r.pop("hash")) for r in records]
    assert ids == sorted(set(ids))
    assert times == sorted(times)
    assert [prev for prev, _ in chain[1:]] == [own for _, own in chain[:-1]]  # one hash chain
    run = "ops-1"
    masked_wire = {"account": "ACME", "cents": 900, "iban": "[sensitive]"}
    assert records == [
        event(
            "approval_requested",
            "U0REQ",
            run,
            reserve,
            tool="reserve_stock",
            policy="reserve_stock",
            call_id="c1",
            args={"sku": "S1", "qty": 5},
            required_approvals=1,
            duplicate_of=None,
        ),
        event(
            "approval_approved",
            "U0BOB",
            run,
            reserve,
            reason=None,
            tool="reserve_stock",
            policy="reserve_stock",
            approved_args={"sku": "S1", "qty": 3},
            # What the decision binds: the digests shown and approved, and the edit.
            args_digest=args_digest({"sku": "S1", "qty": 5}),
            approved_digest=args_digest({"sku": "S1", "qty": 3}),
            edited={"qty": {"proposed": 5, "approved": 3}},
        ),
        event(
            "effect_completed",
            "signoff",
            run,
            reserve,
            call_id="c1",
            tool="reserve_stock",
            reversibility="reversible",
            compensates=None,
            args={"sku": "S1", "qty": 3},
        ),
        event(
            "approval_requested",
            "U0REQ",
            run,
            wire,
            tool="wire_money",
            policy="wire_money",
            call_id="c2",
            args=masked_wire,
            required_approvals=2,
            duplicate_of=None,
        ),
        event("vote", "U0ANN", run, wire, votes=1, required=2),
        event("vote", "U0BOB", run, wire, votes=2, required=2),
        event(
            "approval_approved",
            "U0BOB",
            run,
            wire,
            reason=None,
            tool="wire_money",
            policy="wire_money",
        ),
        event(
            "effect_completed",
            "signoff",
            run,
            wire,
            call_id="c2",
            tool="wire_money",
            reversibility="irreversible",
            compensates=None,
            args=masked_wire,
        ),
        # Undone in reverse order: the wire cannot be undone (a page), the reservation is
        # released with the arguments it was executed with, then the rollback's report.
        event("undo_started", "U0OPS", run, None, to_step=0, restore=True),
        event(
            "page_opened",
            "signoff",
            run,
            None,
            page_id=page,
            call_id="c2",
            tool="wire_money",
            reason="uncompensatable",
        ),
        event(
            "effect_completed",
            "signoff",
            run,
            None,
            call_id="undo:c1",
            tool="release_stock",
            reversibility="irreversible",
            compensates="c1",
            args={"sku": "S1", "qty": 3},
        ),
        event(
            "rollback",
            "U0OPS",
            run,
            None,
            run_id=run,
            to_step=0,
            compensated=["c1"],
            paged=["c2"],
            skipped=[],
            nothing_to_do=None,
            failed={"c2": "wire_money is irreversible; undo it by hand if it must be undone"},
            shared={},
        ),
        event(
            "page_acknowledged",
            "U0ONCALL",
            run,
            None,
            page_id=page,
            tool="wire_money",
            reason="uncompensatable",
        ),
    ]
    assert IBAN not in "\n".join(lines)

    table = list(csv.reader(io.StringIO(export(db_path, "--format", "csv"))))
    header = ["id", "at", "action", "actor", "run_id", "approval_id", "detail"]
    assert table[0] == [*header, "prev_hash", "hash"]
    assert [row[2] for row in table[1:]] == [r["action"] for r in records]
    assert [json.loads(row[6]) for row in table[1:]] == [r["detail"] for r in records]
    assert [tuple(row[7:]) for row in table[1:]] == chain


def event(
    action: str, actor: str, run_id: str, approval_id: str | None, /, **detail: Any
) -> dict[str, Any]:
    return {
        "action": action,
        "actor": actor,
        "run_id": run_id,
        "approval_id": approval_id,
        "detail": detail,
    }


async def test_runs_prune_keeps_the_trail_unless_asked(
    make_runtime: Any, store: Store, db_path: Path
) -> None:
    rt = make_runtime([ops_agent()], policies=POLICIES)
    await scenario(rt)
    before = export(db_path)
    env = clean_env("SIGNOFF_", "SLACK_")
    env["SIGNOFF_DATABASE_URL"] = f"sqlite:///{db_path}"

    def prune(*extra: str) -> dict[str, Any]:
        done = run_text(
            [SIGNOFF, "runs", "prune", "--older-than", "1s", "--yes", "--json", *extra], env=env
        )
        assert done.returncode == 0, done.stderr
        return dict(json.loads(done.stdout))

    await asyncio.sleep(1.1)  # the runs are older than the cutoff
    assert prune() == {"pruned": 1}
    assert export(db_path) == before  # the runs are gone; their trail is whole
    assert prune("--include-audit") == {
        "pruned": 0,
        "audit_events_pruned": len(before.splitlines()),
    }
    assert export(db_path) == ""
