"""The SQLite backend: the embedded default.

One writer thread with group commit (`store.sqlite.writer`), WAL, `synchronous=FULL` by default,
`BEGIN IMMEDIATE` and a busy timeout. A read runs first on the event loop, on a read-only
connection that never waits for a lock (busy timeout 0): a WAL read is a few dozen
microseconds, less than a hop to a thread and back. Only if the database is busy (another
process is recovering or truncating the WAL) does it go through an aiosqlite connection,
which waits up to the busy timeout. Either way no lock is held while rows are handed back.
An in-memory database has one connection, so its reads go through the writer. What each
method does is `store.sql_store` and `store.core`.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from typing import Literal
from typing import TypeVar

import aiosqlite

from store import chain
from store import core
from store import errors
from store import migration
from store import queries
from store.base import DEFAULT_PROTECTED_FACTS
from store.core import MakeBody
from store.rows import Clock
from store.sql_store import SqlStore
from store.sqlite import health as sqlite_health
from store.sqlite import schema as sqlite_schema
from store.sqlite.writer import WAL_LIMIT
from store.sqlite.writer import GroupCommitWriter

T = TypeVar("T")
Synchronous = Literal["OFF", "NORMAL", "FULL", "EXTRA"]
Q = queries.load("sqlite")
DIALECT = "sqlite"


@contextmanager
def translate_errors() -> Iterator[None]:
    """Map sqlite3 errors to store errors, once, for every call."""
    try:
        yield
    except sqlite3.Error as exc:
        raise translated(exc) from exc


def translated(exc: sqlite3.Error) -> errors.StoreError:
    """The store's error for a sqlite3 one."""
    if isinstance(exc, sqlite3.IntegrityError):
        text = str(exc)
        if "FOREIGN KEY" in text:
            return errors.NotFound("the record this write refers to does not exist")
        if "UNIQUE" in text or "PRIMARY KEY" in text:
            return errors.AlreadyExists(f"already exists ({text})")
        return errors.Conflict(text)
    if _disk_full(exc):
        return errors.DiskFull(
            "the database's disk is full: nothing was written; free space and retry"
        )
    return errors.DatabaseError(f"sqlite: {exc}")


def _disk_full(exc: sqlite3.Error) -> bool:
    return getattr(exc, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_FULL


class SqliteStore(SqlStore):
    def __init__(
        self,
        path: str,
        *,
        synchronous: Synchronous = "FULL",
        busy_timeout_ms: int = 10_000,
        protected_facts: frozenset[str] = DEFAULT_PROTECTED_FACTS,
        clock: Clock | None = None,
    ) -> None:
        if synchronous not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"synchronous must be OFF, NORMAL, FULL or EXTRA, not {synchronous!r}")
        self.path = path
        self.url = "sqlite://:memory:" if path == ":memory:" else f"sqlite:///{path}"
        self.protected_facts = protected_facts
        self.clock = clock
        self.known_schema = migration.latest_version(DIALECT)
        self._synchronous = synchronous
        self._busy_timeout_ms = busy_timeout_ms
        wal = None if path == ":memory:" else f"{path}-wal"
        self._writer = GroupCommitWriter(
            self._connect, busy_timeout_ms=busy_timeout_ms, wal_path=wal, synchronous=synchronous
        )
        self._reader: aiosqlite.Connection | None = None
        self._inline_reader: sqlite3.Connection | None = None
        self._refused_for_space = False  # the last write failed for want of space

    def _spend_now(self) -> float | None:
        """A file on this machine is judged by this machine's clock: the process reads it
        itself, a statement less per transaction that counts a call against a limit."""
        judged = self._judge_now()
        return time.time() if judged is None else judged

    async def open(self, *, migrate: bool = True) -> SqliteStore:
        try:
            return await self._open(migrate=migrate)
        except BaseException as exc:
            await self.close()
            if isinstance(exc, errors.DatabaseError):
                raise errors.DatabaseError(f"{self.path}: {exc}") from exc
            raise

    async def _open(self, *, migrate: bool) -> SqliteStore:
        with translate_errors():
            await self._writer.start()
            version = await self._writer.run_alone(sqlite_schema.schema_version)
            migration.refuse_newer(DIALECT, version, self.path)
            if version == 0 and await self._writer.run_alone(sqlite_schema.other_tables) > 0:
                raise errors.ForeignDatabase(
                    f"{self.path} holds another application's tables and no Signoff schema; "
                    "point SIGNOFF_DATABASE_URL at a new or Signoff file"
                )
            if self.path != ":memory:":  # only now: a newer database is left untouched
                await self._writer.run_alone(sqlite_schema.use_wal)
            if migrate:
                await self.migrate()
            else:
                await self._chain_if_ready()
            if self.path != ":memory:":
                self._reader = await _daemon(aiosqlite.connect(self.path))
                self._reader.row_factory = sqlite3.Row
                await self._reader.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")
                await self._reader.execute("PRAGMA query_only = ON")
                self._inline_reader = _inline_reader(self.path)
        return self

    async def sibling(self) -> SqliteStore | None:
        if self.path == ":memory:":
            return None
        twin = SqliteStore(
            self.path,
            synchronous=self._synchronous,
            busy_timeout_ms=self._busy_timeout_ms,
            protected_facts=self.protected_facts,
            clock=self.clock,
        )
        return await twin.open(migrate=False)

    async def migrate(self, *, stop_the_world: bool = False) -> tuple[int, int]:
        """On the writer's connection, alone (`sqlite_schema.apply_migrations`)."""
        with translate_errors():
            versions = await self._writer.run_alone(
                lambda conn: sqlite_schema.apply_migrations(conn, stop_the_world=stop_the_world)
            )
            await self._chain_if_ready()
            return versions

    async def _chain_if_ready(self) -> None:
        """Seal the audit chain in every commit once the schema has it (migration 0023)."""
        ready = await self._writer.run_alone(chain.has_chain)
        self._writer.seal = chain.seal if ready else None

    async def lease_holders(self) -> list[migration.LeaseHolder]:
        with translate_errors():
            return await self._writer.run_alone(sqlite_schema.current_lease_holders)

    async def schema_version(self) -> int:
        with translate_errors():
            return await self._writer.run_alone(sqlite_schema.schema_version)

    async def close(self) -> None:
        if self._inline_reader is not None:
            self._inline_reader.close()
            self._inline_reader = None
        if self._reader is not None:
            await self._reader.close()
            self._reader = None
        await self._writer.close()

    def _connect(self) -> sqlite3.Connection:
        # Used by the writer thread and, for lone commits, the event loop; never at once.
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")
        conn.execute(f"PRAGMA synchronous = {self._synchronous}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute(f"PRAGMA journal_size_limit = {WAL_LIMIT}")  # a checkpointed WAL shrinks
        return conn

    async def _write(self, make: MakeBody[T], *, durable: bool = True) -> T:
        try:  # (not `translate_errors`: a plain try costs a step less than a context manager)
            done = await self._writer.run(
                lambda conn: core.drive(make(), _executor(conn)), durable=durable
            )
        except sqlite3.Error as exc:
            error = translated(exc)
            if isinstance(error, errors.DiskFull):
                self._refused_for_space = True
            raise error from exc
        self._refused_for_space = False
        return done

    async def health(self) -> dict[str, str]:
        if self.path == ":memory:":
            return {}
        return await asyncio.to_thread(
            sqlite_health.problems, self.path, refused_for_space=self._refused_for_space
        )

    async def _read(self, name: str, params: dict[str, Any]) -> list[sqlite3.Row]:
        sql = Q[name]
        with translate_errors():
            if self._reader is None:
                return await self._writer.run(lambda conn: conn.execute(sql, params).fetchall())
            if self._inline_reader is not None:
                try:
                    cursor = self._inline_reader.cursor()
                    if name in BY_POSITION:
                        cursor.row_factory = None
                    return cursor.execute(sql, params).fetchall()
                except sqlite3.OperationalError as exc:
                    if not _busy(exc):
                        raise
            return list(await self._reader.execute_fetchall(sql, params))


BY_POSITION = frozenset({"load_state"})
"""Reads whose rows are used by position only: plain tuples, no `sqlite3.Row` per row (a
state's load reads hundreds of rows)."""


def _executor(conn: sqlite3.Connection) -> Callable[[core.Stmt], Any]:
    """Run a body's statements on the writer's connection, inside its transaction."""

    def execute(stmt: core.Stmt) -> Any:
        sql = Q[stmt.name]
        if not sql:  # a row lock: the single writer already serializes every transaction
            return None
        if stmt.fetch == "many":
            conn.executemany(sql, stmt.params)
            return None
        cursor = conn.execute(sql, stmt.params)
        if stmt.fetch == "all":
            return cursor.fetchall()
        if stmt.fetch == "one":
            return cursor.fetchone()
        return cursor.rowcount if stmt.fetch == "count" else None

    return execute


def _inline_reader(path: str) -> sqlite3.Connection:
    """The event loop's read-only connection: it never waits for a lock (busy timeout 0).

    Each read runs to its last row without an await, so reads on one loop never interleave
    on it; a store opened on one thread's loop may be read from another thread's where the
    SQLite library serializes a connection's use across threads (threadsafety 3)."""
    shareable = sqlite3.threadsafety == 3
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=not shareable)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA busy_timeout = 0")
    conn.execute("PRAGMA query_only = ON")
    return conn


def _busy(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    return code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def _daemon(connection: aiosqlite.Connection) -> aiosqlite.Connection:
    """A reader whose thread never keeps the process alive: a script that raised or forgot
    `close()` still exits (what was committed is durable; the reader only reads)."""
    connection._thread.daemon = True  # aiosqlite has no option for it
    return connection
