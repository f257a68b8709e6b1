"""Whether a SQLite store can serve now, asked the way a new client would: open the file
afresh (never creating it), read the schema version with a short busy timeout, and look at
the disk's free space. What `/readyz` reports."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from store import migration
from store import queries

Q = queries.load("sqlite")
PROBE_TIMEOUT = 1.0  # seconds a locked database may keep the probe waiting
ROOM_TO_WRITE = 64 * 1024  # free bytes under which a disk that refused a write is still full


def problems(path: str, *, refused_for_space: bool) -> dict[str, str]:
    """What keeps the database at `path` from serving, by check (`database`, `schema`,
    `disk`) with the details for the log; empty when it can.

    `refused_for_space`: the last write failed because the disk was full (and none has
    succeeded since). The disk counts as full while that holds and space is still short,
    or whenever it has no free byte at all.
    """
    found = _schema_problems(path)
    free = free_bytes(path)
    if free is not None and (free == 0 or (refused_for_space and free < ROOM_TO_WRITE)):
        found["disk"] = f"disk full: {free} bytes free where {path} lives; writes are refused"
    return found


def free_bytes(path: str) -> int | None:
    try:
        stats = os.statvfs(Path(path).resolve().parent)
    except OSError:
        return None
    return stats.f_bavail * stats.f_frsize


def _schema_problems(path: str) -> dict[str, str]:
    try:
        conn = sqlite3.connect(
            f"{Path(path).resolve().as_uri()}?mode=rw", uri=True, timeout=PROBE_TIMEOUT
        )
    except sqlite3.Error as exc:
        return {"database": f"{path} unreachable: {exc}"}
    try:
        conn.execute("PRAGMA query_only = ON")
        version = conn.execute(Q["schema_version"]).fetchone()[0]
    except sqlite3.Error as exc:
        return {"database": f"{path} unreachable: {exc}"}
    finally:
        conn.close()
    problem = migration.schema_problem(version, migration.latest_version("sqlite"))
    return {} if problem is None else {"schema": f"{path}: {problem}"}
