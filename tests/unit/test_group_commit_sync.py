"""A batch of writes that need not be durable on their own (leases) commits without syncing
the disk; any durable write in the batch syncs it all; the connection's own mode comes back."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from store.sqlite.writer import GroupCommitWriter

FULL, OFF = 2, 0


def sync_mode(conn: sqlite3.Connection) -> int:
    conn.execute("INSERT INTO t VALUES (1)")
    return int(conn.execute("PRAGMA synchronous").fetchone()[0])


async def writer_on(path: Path) -> GroupCommitWriter:
    def connect() -> sqlite3.Connection:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("CREATE TABLE IF NOT EXISTS t (x)")
        return conn

    writer = GroupCommitWriter(connect, wal_path=f"{path}-wal", synchronous="FULL")
    await writer.start()
    return writer


async def test_a_batch_of_writes_that_need_no_sync_commits_unsynced(tmp_path: Path) -> None:
    writer = await writer_on(tmp_path / "w.db")
    try:
        assert await writer.run(sync_mode, durable=False) == OFF
        assert await writer.run(sync_mode) == FULL  # the store's own mode is back
        lone = await asyncio.gather(*(writer.run(sync_mode, durable=False) for _ in range(3)))
        assert lone == [OFF] * 3  # a group of them, on the writer thread
    finally:
        await writer.close()


async def test_one_durable_write_syncs_the_whole_batch(tmp_path: Path) -> None:
    writer = await writer_on(tmp_path / "w.db")
    try:
        modes = await asyncio.gather(
            writer.run(sync_mode, durable=False),
            writer.run(sync_mode),
            writer.run(sync_mode, durable=False),
        )
        assert modes == [FULL] * 3
        assert await writer.run(lambda conn: conn.execute("SELECT count(*) FROM t").fetchone()[0])
    finally:
        await writer.close()
