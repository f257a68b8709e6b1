"""What a metrics scrape and the audit export read stays cheap as history grows: every count
comes from an index (a partial index holds only the rows in that state), never a scan of a
table's rows."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from store import queries

from .test_migrations import migrate


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "signoff.db"


def plan_of(db: Path, name: str) -> list[str]:
    sql = queries.load("sqlite")[name]
    with sqlite3.connect(db) as conn:
        params = dict.fromkeys(re.findall(r":([a-z_]+)", sql))
        plan = [row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params)]
    conn.close()
    return plan


async def test_every_count_of_a_scrape_reads_an_index_only(db: Path) -> None:
    await migrate(db)
    plan = plan_of(db, "operational_counts")
    reads = [
        step for step in plan if step.startswith(("SCAN", "SEARCH")) and "CONSTANT" not in step
    ]
    assert len(reads) == 8, plan
    for step in reads:
        assert " INDEX " in step, f"a scrape reads table rows: {step}"
    partial = {"effects_in_doubt", "pages_open", "outbox_unsent_due"}
    for step in reads:
        if step.startswith("SCAN"):  # a scan is only of a partial index of the rows in a state
            assert any(f"INDEX {name}" in step for name in partial), step


async def test_the_audit_export_pages_by_id(db: Path) -> None:
    await migrate(db)
    plan = " ".join(plan_of(db, "list_audit"))
    assert "INTEGER PRIMARY KEY" in plan or "INDEX audit_events_by_time" in plan, plan


async def test_audit_events_are_never_updated(db: Path) -> None:
    await migrate(db)
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO audit_events (at, actor, action, detail) VALUES (1, 'U0', 'cancel', '{}')"
        )
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("UPDATE audit_events SET actor = 'U0EVIL'")
        assert conn.execute("SELECT actor FROM audit_events").fetchall() == [("U0",)]
    conn.close()
