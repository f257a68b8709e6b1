"""The checked-in `docs/schema/sqlite.md` shows the schema a fresh SQLite file has after every
migration (the PostgreSQL twin is tests/postgres/test_schema_file.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from store import open_store
from store import schema
from store.schema.compare import difference


async def test_a_freshly_migrated_file_has_the_checked_in_schema(tmp_path: Path) -> None:
    path = tmp_path / "fresh.db"
    async with open_store(f"sqlite:///{path}"):
        pass
    conn = sqlite3.connect(path)
    try:
        fresh = schema.sqlite_schema_of(conn)
    finally:
        conn.close()

    problem = difference("sqlite", fresh)

    assert problem is None, problem


async def test_a_schema_change_fails_with_a_diff_and_the_command_that_regenerates(
    tmp_path: Path,
) -> None:
    path = tmp_path / "changed.db"
    async with open_store(f"sqlite:///{path}"):
        pass
    conn = sqlite3.connect(path)
    try:
        conn.execute("CREATE INDEX runs_by_task ON runs (task)")
        problem = difference("sqlite", schema.sqlite_schema_of(conn))
    finally:
        conn.close()

    assert problem is not None
    assert "python -m store.schema sqlite --write" in problem
    assert "+CREATE INDEX runs_by_task ON runs (task);" in problem.splitlines()


def test_the_schema_text_is_the_same_whatever_order_objects_were_made_in(tmp_path: Path) -> None:
    made = []
    for name, order in (("a.db", ("t1", "t2")), ("b.db", ("t2", "t1"))):
        conn = sqlite3.connect(tmp_path / name)
        for table in order:
            conn.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY)")
        conn.execute("ALTER TABLE t1 ADD COLUMN note TEXT DEFAULT 'a, (b)'")
        made.append(schema.sqlite_schema_of(conn))
        conn.close()

    assert made[0] == made[1]
    assert "    note TEXT DEFAULT 'a, (b)'\n);" in made[0]
