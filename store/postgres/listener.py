"""LISTEN for the outbox's notifications on a connection of its own, opened again when lost."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import asyncpg

NOTIFY_CHANNEL = "SELECT left('signoff:' || current_schema(), 63)"
"""The channel every outbox row notifies at commit (its topic as the payload): one per
schema, named as the outbox trigger names it."""


class Listener:
    """One LISTEN connection that reconnects (every second until it can) when it drops."""

    def __init__(self, url: str, callback: Callable[[str], None]) -> None:
        self.url, self.callback = url, callback
        self.conn: asyncpg.Connection | None = None
        self.stopped = False
        self.retry: asyncio.Task[None] | None = None

    async def connect(self) -> None:
        conn = await asyncpg.connect(self.url)
        channel = await conn.fetchval(NOTIFY_CHANNEL)
        await conn.add_listener(channel, lambda _c, _p, _ch, topic: self.callback(topic))
        conn.add_termination_listener(lambda _c: self._lost())
        self.conn = conn

    def _lost(self) -> None:
        if not self.stopped and (self.retry is None or self.retry.done()):
            self.retry = asyncio.get_running_loop().create_task(self._reconnect())

    async def _reconnect(self) -> None:
        while not self.stopped:
            await asyncio.sleep(1.0)
            try:
                await self.connect()
                return
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
                continue

    async def stop(self) -> None:
        self.stopped = True
        if self.retry is not None:
            self.retry.cancel()
        if self.conn is not None and not self.conn.is_closed():
            await self.conn.close()
