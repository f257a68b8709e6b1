"""SQLite reads run on the event loop without waiting for a lock; a busy database sends them
to the reader thread, which waits, so the loop is never blocked and the read still answers."""

from __future__ import annotations

import sqlite3
from datetime import UTC
from datetime import datetime
from pathlib import Path

from store import Checkpoint
from store import Message
from store import Run
from store import open_store
from store.sqlite import SqliteStore


async def create(store: SqliteStore, run_id: str) -> None:
    at = datetime.now(UTC)
    run = Run(id=run_id, agent="a", task="t", lineage_id=run_id, created_at=at, updated_at=at)
    snapshot = Checkpoint.opening(
        run_id, [Message(role="user", content="t")], status=run.status, created_at=at
    )
    await store.create_run(run, snapshot)


async def test_a_read_sees_what_was_just_committed(tmp_path: Path) -> None:
    async with open_store(f"sqlite:///{tmp_path / 's.db'}") as store:
        for n in range(3):
            await create(store, f"r{n}")
            assert [r.id for r in await store.list_runs()] == [f"r{i}" for i in range(n, -1, -1)]


class BusyOnce(sqlite3.Connection):
    """The loop's reader meeting a busy database once. A WAL reader is refused only while
    another connection recovers the WAL index, which a test cannot bring about on cue, so
    the refusal is raised as the driver raises it: an OperationalError with SQLITE_BUSY."""

    busy = 1

    def cursor(self, factory: type[sqlite3.Cursor] | None = None) -> sqlite3.Cursor:
        return super().cursor(factory or BusyOnceCursor)


class BusyOnceCursor(sqlite3.Cursor):
    def execute(self, sql: str, parameters: object = (), /) -> sqlite3.Cursor:
        conn = self.connection
        assert isinstance(conn, BusyOnce)
        if conn.busy:
            conn.busy -= 1
            refused = sqlite3.OperationalError("database is locked")
            refused.sqlite_errorcode = sqlite3.SQLITE_BUSY  # type: ignore[attr-defined]
            raise refused
        return super().execute(sql, parameters)  # type: ignore[arg-type]


async def test_a_read_the_database_refuses_goes_to_the_reader_thread(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = await open_store(f"sqlite:///{path}")
    assert isinstance(store, SqliteStore)
    try:
        await create(store, "r1")
        assert store._inline_reader is not None
        store._inline_reader.close()
        store._inline_reader = sqlite3.connect(path, factory=BusyOnce, isolation_level=None)
        store._inline_reader.row_factory = sqlite3.Row
        run = await store.get_run("r1")
        assert run.id == "r1"
        assert store._inline_reader.busy == 0  # it was tried first, and refused
        assert (await store.get_run("r1")).id == "r1"  # and is used again afterwards
        store._inline_reader.busy = 1  # a state's load reads plain rows: refused the same way
        assert [m.content for m in (await store.load_state("r1")).messages] == ["t"]
        assert store._inline_reader.busy == 0
    finally:
        await store.close()
