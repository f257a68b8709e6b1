"""Terminal views: what the CLI prints for people."""

from __future__ import annotations

from datetime import UTC
from datetime import datetime

from rich.console import Console

from bot import views
from store import Effect
from store import Reversibility

AT = datetime(2026, 11, 29, tzinfo=UTC)


def effect(call_id: str, tool: str) -> Effect:
    return Effect(
        run_id="r1",
        call_id=call_id,
        lineage_id="r1",
        step=1,
        tool=tool,
        args={},
        idempotency_key=f"key-{call_id}",
        reversibility=Reversibility.IRREVERSIBLE,
        started_at=AT,
    )


def rendered(table: object) -> str:
    console = Console(width=120, record=True)
    console.print(table)
    return console.export_text()


def test_rollback_table_lists_effects_newest_first_as_the_rollback_went() -> None:
    effects = [effect("c2", "issue_refund"), effect("c3", "charge"), effect("c4", "send_email")]
    report = {"to_step": 1, "compensated": ["c2"], "paged": ["c4", "c3"], "skipped": []}

    text = rendered(views.rollback_table(report, effects))

    rows = [line.split()[1:4:2] for line in text.splitlines() if " c" in line]
    assert rows == [["c4", "send_email"], ["c3", "charge"], ["c2", "issue_refund"]]
