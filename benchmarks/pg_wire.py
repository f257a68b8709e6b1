"""Counting PostgreSQL round trips on the wire: a TCP proxy on 127.0.0.1 between a client and
the server that reads the client's half of the protocol and counts what makes the client wait.

A round trip is a message after which the client waits for the server: `Sync` (the end of an
extended-protocol exchange, which asyncpg sends once per statement, per prepare and per
pipelined batch) or a simple `Query` (BEGIN and COMMIT go that way). Counting on the wire
sees what the store really sends, whatever the driver batches or prepares.

    async with WireCounter(server_port=5432) as wire:
        url = wire.url("postgresql://postgres@127.0.0.1:5432/test")
        ...
        print(wire.round_trips)
"""

from __future__ import annotations

import asyncio
import struct
from types import TracebackType
from urllib.parse import urlsplit
from urllib.parse import urlunsplit

WAITS = {b"S", b"Q"}
"""Client messages the client then waits on: Sync and a simple Query."""
_STARTUP_CODES = {80877103, 80877104}  # SSLRequest, GSSENCRequest: another untyped one follows


class WireCounter:
    def __init__(self, server_host: str = "127.0.0.1", server_port: int = 5432) -> None:
        self.server = (server_host, server_port)
        self.round_trips = 0
        self.connections = 0
        self._listener: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def port(self) -> int:
        assert self._listener is not None, "the counter is not started"
        return int(self._listener.sockets[0].getsockname()[1])

    def url(self, server_url: str) -> str:
        """`server_url` pointed at the counter instead of the server (SSL off: the counter
        reads the protocol in the clear)."""
        parts = urlsplit(server_url)
        netloc = parts.netloc.rsplit("@", 1)
        host = f"127.0.0.1:{self.port}"
        netloc_text = f"{netloc[0]}@{host}" if len(netloc) == 2 else host
        query = "&".join(q for q in (parts.query, "sslmode=disable") if q)
        return urlunsplit((parts.scheme, netloc_text, parts.path, query, parts.fragment))

    async def __aenter__(self) -> WireCounter:
        self._listener = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(
        self, _t: type[BaseException] | None, _e: BaseException | None, _b: TracebackType | None
    ) -> None:
        if self._listener is not None:
            self._listener.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def reset(self) -> int:
        """The count so far, and start again from zero."""
        counted, self.round_trips = self.round_trips, 0
        return counted

    async def _serve(
        self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter
    ) -> None:
        self.connections += 1
        server_in, server_out = await asyncio.open_connection(*self.server)
        upstream = self._spawn(self._client_to_server(client_in, server_out))
        downstream = self._spawn(_pipe(server_in, client_out))
        await asyncio.wait({upstream, downstream}, return_when=asyncio.FIRST_COMPLETED)
        for writer in (client_out, server_out):
            writer.close()

    def _spawn(self, work: object) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.ensure_future(work)  # type: ignore[arg-type]
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _client_to_server(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        try:
            while True:  # untyped start-up messages: SSL/GSS requests, then the startup
                head = await reader.readexactly(8)
                length, code = struct.unpack("!II", head)
                writer.write(head + await reader.readexactly(length - 8))
                if code not in _STARTUP_CODES:
                    break
            while True:
                kind = await reader.readexactly(1)
                size = await reader.readexactly(4)
                body = await reader.readexactly(struct.unpack("!I", size)[0] - 4)
                if kind in WAITS:
                    self.round_trips += 1
                writer.write(kind + size + body)
                if kind in WAITS:
                    await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            return


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    except ConnectionError:
        return
