"""Group commit: one writer thread owns the SQLite write connection.

Callers submit jobs (functions of the connection). Whatever is queued while a transaction is
being committed goes into the next transaction together, each job in its own savepoint, so
a hundred concurrent runs share one fsync and one failing job does not undo its neighbours.

aiosqlite runs one statement per round trip to its thread; a batch of jobs needs many
statements in one transaction on that thread, so the writer drives its own single thread.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
Job = Callable[[sqlite3.Connection], Any]

MAX_BATCH = 512


class GroupCommitWriter:
    def __init__(self, connect: Callable[[], sqlite3.Connection]) -> None:
        self._connect = connect
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="signoff-writer")
        self._conn: sqlite3.Connection | None = None
        self._queue: list[tuple[Job, asyncio.Future[Any]]] = []
        self._in_flight = False
        self._idle = asyncio.Event()
        self._idle.set()

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._conn = await loop.run_in_executor(self._executor, self._connect)

    async def run(self, job: Callable[[sqlite3.Connection], T]) -> T:
        """Run `job` inside the next group transaction and return what it returned."""
        if self._conn is None:
            raise RuntimeError("the store is closed")
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._queue.append((job, future))
        if not self._in_flight:
            self._flush()
        return await future

    async def run_alone(self, job: Callable[[sqlite3.Connection], T]) -> T:
        """Run `job` outside any transaction (migrations, checkpoints of the WAL)."""
        await self._idle.wait()
        conn = self._conn
        if conn is None:
            raise RuntimeError("the store is closed")
        return await asyncio.get_running_loop().run_in_executor(self._executor, job, conn)

    async def close(self) -> None:
        await self._idle.wait()
        conn, self._conn = self._conn, None
        if conn is not None:
            await asyncio.get_running_loop().run_in_executor(self._executor, conn.close)
        self._executor.shutdown(wait=True)

    def _flush(self) -> None:
        batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
        self._in_flight = True
        self._idle.clear()
        jobs = [job for job, _ in batch]
        done = asyncio.get_running_loop().run_in_executor(self._executor, self._commit, jobs)
        done.add_done_callback(lambda f: self._settle(batch, f))

    def _settle(
        self, batch: list[tuple[Job, asyncio.Future[Any]]], done: asyncio.Future[Any]
    ) -> None:
        error = done.exception()
        outcomes = [(False, error)] * len(batch) if error else done.result()
        for (_, future), (ok, value) in zip(batch, outcomes, strict=True):
            if future.done():
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)
        if self._queue and self._conn is not None:
            self._flush()
        else:
            self._in_flight = False
            self._idle.set()

    def _commit(self, jobs: list[Job]) -> list[tuple[bool, Any]]:
        conn = self._conn
        if conn is None:
            raise RuntimeError("the store is closed")
        conn.execute("BEGIN IMMEDIATE")
        try:
            outcomes = [_run_in_savepoint(conn, job) for job in jobs]
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return outcomes


def _run_in_savepoint(conn: sqlite3.Connection, job: Job) -> tuple[bool, Any]:
    conn.execute("SAVEPOINT job")
    try:
        result = job(conn)
    except Exception as exc:
        conn.execute("ROLLBACK TO job")
        conn.execute("RELEASE job")
        return False, exc
    conn.execute("RELEASE job")
    return True, result
