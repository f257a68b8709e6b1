"""Group commit: one writer connection per SQLite file, one transaction per batch of writes.

Callers submit jobs (functions of the connection). Everything queued in one turn of the event
loop, or while the previous transaction was being committed, goes into the next transaction
together: a hundred concurrent runs share one fsync. One failing job does not undo its
neighbours: the batch is rolled back and run again with each job in its own savepoint.

A batch of one job (a lone run) commits inline on the event loop: nothing else is waiting,
and waking a thread and then the loop again only adds to the fsync. It never waits for a
lock there (busy timeout 0); if another process holds the database, the batch goes to the
writer thread, which waits up to the busy timeout. Larger batches always go to the thread,
so the loop keeps preparing the next batch while the disk syncs. WAL checkpoints run on the
thread too: every 256 commits (PASSIVE), and (TRUNCATE, so the WAL gives its space back) once
the WAL passes `wal_limit` bytes or after a write failed for want of space or on I/O, before
the next batch, so a full disk recovers by itself once space is freed.

A write may say it need not be durable on its own (`durable=False`: a lease taken, renewed
or given back): a batch of only such writes commits without syncing the disk. SQLite's WAL
is one ordered log, so the next synced commit makes them durable too, and a crash of the
process (not of the machine) loses nothing.

aiosqlite offers one statement per round trip to its thread; a batch needs many statements
in one transaction, so the writer drives its own single thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
from collections.abc import Callable
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import KW_ONLY
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import NamedTuple
from typing import TypeVar

T = TypeVar("T")


class StoreClosed(sqlite3.ProgrammingError):
    """A write after close(); translated like any other driver error."""


Job = Callable[[sqlite3.Connection], Any]
Outcome = tuple[bool, Any]


class Queued(NamedTuple):
    job: Job
    future: asyncio.Future[Any]
    durable: bool
    """False: the job need not reach the disk on its own (a lease)."""


MAX_BATCH = 512
CHECKPOINT_EVERY = 256
WAL_LIMIT = 8 * 1024**2
"""Past this many bytes of WAL, the next batch checkpoints it and truncates it."""


def _writer_thread() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="signoff-writer")


@dataclass(eq=False)
class GroupCommitWriter:
    connect: Callable[[], sqlite3.Connection]
    _: KW_ONLY
    busy_timeout_ms: int = 10_000
    inline: bool = True
    wal_path: str | None = None
    wal_limit: int = WAL_LIMIT
    synchronous: str = "FULL"
    seal: Callable[[sqlite3.Connection], None] | None = field(init=False, default=None)
    """Run in each transaction before it commits (`store.chain.seal`: the audit chain),
    once the schema has what it needs."""
    _truncate_due: bool = field(init=False, default=False)
    """Set after a write failed for want of space (or on I/O)."""
    _executor: ThreadPoolExecutor = field(init=False, default_factory=_writer_thread)
    _conn: sqlite3.Connection | None = field(init=False, default=None)
    _queue: list[Queued] = field(init=False, default_factory=list)
    _in_flight: bool = field(init=False, default=False)
    _idle: asyncio.Event = field(init=False, default_factory=asyncio.Event)
    _commits: int = field(init=False, default=0)
    _waits: bool = field(init=False, default=True)
    """Whether the connection's busy timeout is on."""

    def __post_init__(self) -> None:
        self._idle.set()

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._conn = await loop.run_in_executor(self._executor, self.connect)

    async def run(self, job: Callable[[sqlite3.Connection], T], *, durable: bool = True) -> T:
        """Run `job` inside the next group transaction and return what it returned."""
        if self._conn is None:
            raise StoreClosed("the store is closed")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queue.append(Queued(job, future, durable))
        if not self._in_flight:
            # Flush at the end of this loop turn, so that every run woken by the last commit
            # gets to queue its next write into the same transaction.
            self._in_flight = True
            self._idle.clear()
            loop.call_soon(self._flush)
        return await future

    async def run_alone(self, job: Callable[[sqlite3.Connection], T]) -> T:
        """Run `job` on the writer thread outside any transaction (migrations, maintenance).

        Writes submitted meanwhile wait for it: the connection is never used twice at once.
        """
        while self._in_flight:
            await self._idle.wait()
        conn = self._connection()
        self._in_flight = True
        self._idle.clear()
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, job, conn)
        finally:
            if self._queue and self._conn is not None:
                asyncio.get_running_loop().call_soon(self._flush)
            else:
                self._in_flight = False
                self._idle.set()

    async def close(self) -> None:
        while self._in_flight:
            await self._idle.wait()
        conn, self._conn = self._conn, None
        if conn is not None:
            await asyncio.get_running_loop().run_in_executor(self._executor, conn.close)
        self._executor.shutdown(wait=True)

    def _flush(self) -> None:
        batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
        jobs = [queued.job for queued in batch]
        synced = any(queued.durable for queued in batch)
        self._commits += 1
        checkpoint = self._commits % CHECKPOINT_EVERY == 0 or self._wal_too_big()
        if self.inline and len(jobs) == 1 and not checkpoint and not self._truncate_due:
            try:
                outcomes = self._try_inline(jobs, synced)
            except BaseException as exc:  # never leave a caller waiting
                outcomes = [(False, exc)] * len(jobs)
            if outcomes is not None:
                self._settle(batch, outcomes)
                return
        done = asyncio.get_running_loop().run_in_executor(
            self._executor, self._commit_waiting, jobs, checkpoint, synced
        )
        done.add_done_callback(lambda f: self._settled_by_thread(batch, f))

    def _try_inline(self, jobs: list[Job], synced: bool) -> list[Outcome] | None:
        """Commit on the loop without waiting for a lock; None if the database is busy."""
        conn = self._connection()
        self._set_waiting(conn, False)
        with self._syncing(conn, synced):
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError:
                return None
            try:
                return self._commit_open(conn, jobs)
            except BaseException as exc:
                return [(False, exc)] * len(jobs)

    def _commit_waiting(self, jobs: list[Job], checkpoint: bool, synced: bool) -> list[Outcome]:
        conn = self._connection()
        self._set_waiting(conn, True)
        if self._truncate_due:  # give the WAL's space back first, so this batch may fit
            self._truncate(conn)
        with self._syncing(conn, synced):
            conn.execute("BEGIN IMMEDIATE")
            outcomes = self._commit_open(conn, jobs)
        if self._truncate_due or self._wal_too_big():
            self._truncate(conn)
        elif checkpoint:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        return outcomes

    def _truncate(self, conn: sqlite3.Connection) -> None:
        """Checkpoint the whole WAL and truncate it; still due if that failed or a reader
        kept it from finishing (the disk may still be full)."""
        with contextlib.suppress(sqlite3.Error):
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            self._truncate_due = busy != 0

    def _wal_too_big(self) -> bool:
        if self.wal_path is None:
            return False
        try:
            return os.stat(self.wal_path).st_size > self.wal_limit
        except OSError:
            return False

    @contextlib.contextmanager
    def _syncing(self, conn: sqlite3.Connection, synced: bool) -> Iterator[None]:
        """A batch that need not be synced commits with `synchronous = OFF`, then the mode
        goes back to the store's own."""
        if synced or self.synchronous == "OFF":
            yield
            return
        conn.execute("PRAGMA synchronous = OFF")
        try:
            yield
        finally:
            conn.execute(f"PRAGMA synchronous = {self.synchronous}")

    def _set_waiting(self, conn: sqlite3.Connection, waits: bool) -> None:
        if waits != self._waits:
            conn.execute(f"PRAGMA busy_timeout = {self.busy_timeout_ms if waits else 0}")
            self._waits = waits

    def _commit_open(self, conn: sqlite3.Connection, jobs: list[Job]) -> list[Outcome]:
        if len(jobs) == 1:
            return self._commit_one(conn, jobs[0])
        try:
            outcomes = _run_all_or_none(conn, jobs)
            if outcomes is None:  # one job failed: run them again, each in its own savepoint
                conn.execute("BEGIN IMMEDIATE")
                outcomes = [_run_in_savepoint(conn, job) for job in jobs]
        except BaseException:
            _roll_back(conn)
            raise
        self._seal_and_commit(conn)
        return outcomes

    def _commit_one(self, conn: sqlite3.Connection, job: Job) -> list[Outcome]:
        """A batch of one needs no savepoint: if the job fails, the transaction is rolled back."""
        try:
            result = job(conn)
        except Exception as exc:
            _roll_back(conn)
            return [(False, exc)]
        except BaseException:
            _roll_back(conn)
            raise
        self._seal_and_commit(conn)
        return [(True, result)]

    def _seal_and_commit(self, conn: sqlite3.Connection) -> None:
        """Seal the open transaction (`seal`, when set) and commit it; roll it back if either
        fails."""
        try:
            if self.seal is not None:
                self.seal(conn)
            conn.execute("COMMIT")
        except BaseException:
            _roll_back(conn)
            raise

    def _settled_by_thread(self, batch: list[Queued], done: asyncio.Future[Any]) -> None:
        error = done.exception()
        self._settle(batch, [(False, error)] * len(batch) if error else done.result())

    def _settle(self, batch: list[Queued], outcomes: list[Outcome]) -> None:
        for (_, future, _), (ok, value) in zip(batch, outcomes, strict=True):
            if not ok and _out_of_space(value):
                self._truncate_due = True
            if future.done():
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)
        if self._queue and self._conn is not None:
            asyncio.get_running_loop().call_soon(self._flush)
        else:
            self._in_flight = False
            self._idle.set()

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreClosed("the store is closed")
        return self._conn


def _out_of_space(exc: BaseException) -> bool:
    """A write that failed because the disk is full (or on I/O, which a full disk can cause)."""
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    return isinstance(exc, sqlite3.Error) and code in (sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR)


def _run_all_or_none(conn: sqlite3.Connection, jobs: list[Job]) -> list[Outcome] | None:
    """Every job's result, in the open transaction; None, with the transaction rolled back,
    if any job failed. Failures are rare, so a batch pays for savepoints only when one does:
    jobs are functions of the database alone, so running them again after the rollback is
    running them for the first time."""
    results = []
    for job in jobs:
        try:
            results.append((True, job(conn)))
        except Exception:
            if not conn.in_transaction:  # SQLite rolled back the whole batch (disk full, I/O)
                raise
            conn.execute("ROLLBACK")
            return None
    return results


def _run_in_savepoint(conn: sqlite3.Connection, job: Job) -> Outcome:
    conn.execute("SAVEPOINT job")
    try:
        result = job(conn)
    except Exception as exc:
        if not conn.in_transaction:  # SQLite rolled back the whole batch (disk full, I/O)
            raise
        conn.execute("ROLLBACK TO job")
        conn.execute("RELEASE job")
        return False, exc
    conn.execute("RELEASE job")
    return True, result


def _roll_back(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:  # SQLite may have rolled back already (I/O error, full)
        conn.execute("ROLLBACK")
