"""Opening a SQLite file: WAL, which schema version it holds, and applying migrations."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator

from store import migration, queries

Q = queries.load("sqlite")
DIALECT = "sqlite"


def use_wal(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA wal_autocheckpoint = 0")  # the writer checkpoints on its own thread


def other_tables(conn: sqlite3.Connection) -> int:
    return int(conn.execute(Q["other_tables"]).fetchone()[0])


def schema_version(conn: sqlite3.Connection) -> int:
    exists = conn.execute(Q["schema_table_exists"]).fetchone()[0]
    return conn.execute(Q["schema_version"]).fetchone()[0] if exists else 0


def apply_migrations(conn: sqlite3.Connection) -> tuple[int, int]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(Q["create_schema_table"])
        before = conn.execute(Q["schema_version"]).fetchone()[0]
        for step in migration.pending(DIALECT, before):
            for statement in _statements(step.sql):
                conn.execute(statement)
            params = {"version": step.version, "name": step.name, "applied_at": time.time()}
            conn.execute(Q["record_migration"], params)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return before, max(before, migration.latest_version(DIALECT))


def _statements(script: str) -> Iterator[str]:
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            yield buffer
            buffer = ""
    if buffer.strip() and not all(
        part.strip().startswith("--") or not part.strip() for part in buffer.splitlines()
    ):
        raise ValueError(f"incomplete SQL statement in migration: {buffer.strip()[:80]}")
