"""Writes that arrive together commit together (issue 44.4): decisions, and steps' commits.

Every decision writes an audit event, and the audit chain numbers events in commit order
under one lock held from the event's commit-time trigger to the end of its commit, the
disk's flush included (migrations 0016, 0023): decisions made one transaction each pass
that lock one at a time, a flush each, so a burst of 200 clicks took 200 flushes in a row
before the last was durable. Here, while one write of decisions is under way, the decisions
that arrive wait for it and then go together: each still its own `decide_at_once`
statement, with its own compare-and-set, but all in one pipeline that commits once (the
extended protocol's one implicit transaction up to its Sync: all or nothing), one turn of
the lock and one flush. A decision that finds no write under way goes at once, alone.
A resumed run's step commits its effect's outcome, whose `effect_completed` event takes the
same lock: the steps of different runs (`commit_step`, each with its own lease and seq
checks) go together the same way. So do effects' starts (`start_step`, each with its own
lease, epoch and seq checks and its own lineage and key locks), each a flushed commit alone:
a batch holds its runs' locks to its one commit, and a batch that deadlocks with another
process's writes is tried again one by one like any other that fails.

A subject (an approval, a run) is in a write at most once: a second write of it waits for
the next, where its own checks see the first. A write of several that fails (one step's
check refused it, a deadlock) is tried again one by one, so each answer is its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any

Send = Callable[[Sequence[Sequence[Any]]], Awaitable[list[Any]]]
"""Write these statements in one transaction: each one's answer, in order."""

MOST = 64
"""Statements in one write at most."""


class Together:
    def __init__(self, send: Send) -> None:
        self._send = send
        self._waiting: list[tuple[str, Sequence[Any], asyncio.Future[Any]]] = []
        self._writer: asyncio.Task[None] | None = None

    async def write(self, subject: str, args: Sequence[Any]) -> Any:
        """The statement's answer once it committed (what `send` answers for it)."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting.append((subject, args, future))
        if self._writer is None:
            self._writer = asyncio.get_running_loop().create_task(self._write())
        return await future

    async def _write(self) -> None:
        batch: list[tuple[str, Sequence[Any], asyncio.Future[Any]]] = []
        try:
            while self._waiting:
                batch = self._next()
                try:
                    found = await self._send([args for _, args, _ in batch])
                except Exception as exc:
                    if len(batch) == 1:
                        _fail(batch[0][2], exc)
                        continue
                    await asyncio.gather(*(self._alone(entry) for entry in batch))
                    continue
                for (_, _, future), answer in zip(batch, found, strict=True):
                    if not future.done():
                        future.set_result(answer)
        except BaseException:  # cancelled (the loop ends): nobody is left waiting forever
            for _, _, future in (*batch, *self._waiting):
                future.cancel()
            self._waiting = []
            raise
        finally:
            self._writer = None

    def _next(self) -> list[tuple[str, Sequence[Any], asyncio.Future[Any]]]:
        batch: list[tuple[str, Sequence[Any], asyncio.Future[Any]]] = []
        later: list[tuple[str, Sequence[Any], asyncio.Future[Any]]] = []
        seen: set[str] = set()
        for entry in self._waiting:
            if entry[0] in seen or len(batch) == MOST:
                later.append(entry)
            else:
                seen.add(entry[0])
                batch.append(entry)
        self._waiting = later
        return batch

    async def _alone(self, entry: tuple[str, Sequence[Any], asyncio.Future[Any]]) -> None:
        _, args, future = entry
        try:
            found = await self._send([args])
        except Exception as exc:
            _fail(future, exc)
        else:
            if not future.done():
                future.set_result(found[0])


def _fail(future: asyncio.Future[Any], exc: Exception) -> None:
    if not future.done():
        future.set_exception(exc)
