"""Opening a SQLite file: WAL, which schema version it holds, and applying migrations."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator

from store import migration
from store import queries
from store.digest import unhex

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


def apply_migrations(conn: sqlite3.Connection, *, stop_the_world: bool = False) -> tuple[int, int]:
    """Apply pending migrations in one transaction; (version before, version after).
    Refused, changing nothing (`UnsafeMigration`), while workers the migrations would leave
    behind hold leases, unless `stop_the_world` takes their leases in it."""
    conn.create_function("unhex", 1, unhex, deterministic=True)  # SQLite's own from 3.41
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(Q["create_schema_table"])
        before = conn.execute(Q["schema_version"]).fetchone()[0]
        steps = migration.pending(DIALECT, before)
        _clear_the_way(conn, before, steps, stop_the_world=stop_the_world)
        for step in steps:
            for statement in _statements(step.sql):
                conn.execute(statement)
            params = {"version": step.version, "name": step.name, "applied_at": time.time()}
            conn.execute(Q["record_migration"], params)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return before, steps[-1].version if steps else before


def _clear_the_way(
    conn: sqlite3.Connection,
    before: int,
    steps: tuple[migration.Migration, ...],
    *,
    stop_the_world: bool,
) -> None:
    blocking = migration.in_the_way(steps, lease_holders(conn, before))
    if not stop_the_world:
        migration.refuse_in_the_way(steps, blocking)
    for owner in {holder.worker for holder in blocking}:
        conn.execute(Q["take_leases"], {"owner": owner})


def current_lease_holders(conn: sqlite3.Connection) -> list[migration.LeaseHolder]:
    return lease_holders(conn, schema_version(conn))


def lease_holders(conn: sqlite3.Connection, version: int) -> list[migration.LeaseHolder]:
    """The workers holding live leases on a database at schema `version`, with their schemas."""
    if version == 0:
        return []
    said = conn.execute(Q["lease_schema_kept"]).fetchone()[0]
    query = Q["lease_holders"] if said else Q["lease_holders_unsaid"]
    rows = conn.execute(query).fetchall()
    return [migration.LeaseHolder(*row) for row in rows]


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
