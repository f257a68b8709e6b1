"""The audit sink streams every event at least once and in order, from a durable cursor:
to a real HTTP receiver that is down for a while and then answers 500s (signed NDJSON, no
event lost, none sent again once acknowledged, a restart sends only what is new), and to a
real TCP syslog receiver that goes away mid-stream (RFC 5424 frames, every event arrives)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from datetime import UTC
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from prometheus_client import REGISTRY
from support.helpers import eventually
from support.helpers import free_port

from bot.audit_sink import AuditSink
from bot.audit_sink import HttpTransport
from bot.audit_sink import SyslogTransport
from runtime import Runtime
from signoff.webhooks import verify
from store import AuditEvent
from store import Store
from store import open_store

SECRET = "sink-secret"
RFC5424 = re.compile(
    rb'^<110>1 \d{4}-\d\d-\d\dT[\d:.]+Z \S+ signoff - (\S+) \[signoff@32473 id="(\d+)" '
    rb'hash="([0-9a-f]{64})"\] \xef\xbb\xbf(\{.*\})$'
)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = await open_store(f"sqlite:///{tmp_path / 'signoff.db'}")
    yield opened
    await opened.close()


async def write(store: Store, count: int) -> None:
    for n in range(count):
        at = datetime.now(UTC)
        await store.record_event(AuditEvent(action="note", actor="U0", detail={"n": n}, at=at))


async def ids_in(store: Store) -> list[int]:
    return [e.id for e in await store.list_audit(limit=100_000) if e.id is not None]


class Receiver:
    """An HTTP receiver on a fixed port that can be down, or answer 500 for a while."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.runner: web.AppRunner | None = None
        self.received: list[dict[str, Any]] = []
        self.failing = 0

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        verify(
            SECRET,
            timestamp=request.headers.get("X-Signoff-Timestamp"),
            signature_header=request.headers.get("X-Signoff-Signature"),
            body=body,
        )
        if self.failing:
            self.failing -= 1
            return web.Response(status=500)
        self.received.extend(json.loads(line) for line in body.decode().splitlines())
        return web.Response(status=204)

    async def up(self) -> None:
        app = web.Application()
        app.router.add_post("/audit", self.handle)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", self.port).start()

    async def down(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None


def sink(rt: Runtime, transport: Any) -> AuditSink:
    return AuditSink(rt, transport, batch=7, poll=0.02, max_delay=0.1)


def lag() -> float | None:
    return REGISTRY.get_sample_value("signoff_audit_sink_lag_events")


async def test_http_sink_survives_an_outage_loses_nothing_and_resumes_from_its_cursor(
    store: Store,
) -> None:
    rt = Runtime(store, [])
    receiver = Receiver(free_port())
    await write(store, 30)
    stop = asyncio.Event()
    url = f"http://127.0.0.1:{receiver.port}/audit"
    running = asyncio.create_task(sink(rt, HttpTransport(url, SECRET)).run(stop))
    try:
        await eventually(lambda: _true(lag() == 30))  # down: nothing delivered, 30 behind
        await asyncio.sleep(0.3)  # retried a few times, still down
        await receiver.up()
        await eventually(lambda: _true(len(receiver.received) == 30), within=15)
        receiver.failing = 2  # the receiver errs twice, then takes them
        await write(store, 20)
        await eventually(lambda: _true(len(receiver.received) == 50), within=15)
    finally:
        stop.set()
        await running
    delivered = [r["id"] for r in receiver.received]
    assert delivered == await ids_in(store)  # all, in order, none twice
    assert all(r["hash"] for r in receiver.received)

    await write(store, 5)  # a restart sends what is new, not the trail again
    stop = asyncio.Event()
    running = asyncio.create_task(sink(rt, HttpTransport(url, SECRET)).run(stop))
    try:
        await eventually(lambda: _true(len(receiver.received) == 55), within=15)
        await asyncio.sleep(0.2)
    finally:
        stop.set()
        await running
        await receiver.down()
    assert [r["id"] for r in receiver.received] == await ids_in(store)
    assert lag() == 0


class SyslogReceiver:
    """A TCP syslog server (octet-counted RFC 5424 frames) that can go away and come back."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.server: asyncio.Server | None = None
        self.frames: list[bytes] = []
        self.writers: list[asyncio.StreamWriter] = []

    async def client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.append(writer)
        try:
            while True:
                length = await reader.readuntil(b" ")
                self.frames.append(await reader.readexactly(int(length[:-1])))
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def up(self) -> None:
        self.server = await asyncio.start_server(self.client, "127.0.0.1", self.port)

    async def down(self) -> None:
        assert self.server is not None
        self.server.close()
        for writer in self.writers:
            writer.transport.abort()
        self.writers.clear()
        await self.server.wait_closed()

    def ids(self) -> list[int]:
        found = []
        for frame in self.frames:
            match = RFC5424.match(frame)
            assert match is not None, frame[:200]
            assert json.loads(match[4])["id"] == int(match[2])
            found.append(int(match[2]))
        return found


async def test_syslog_sink_delivers_every_event_across_a_receiver_restart(store: Store) -> None:
    rt = Runtime(store, [])
    receiver = SyslogReceiver(free_port())
    await receiver.up()
    await write(store, 40)
    stop = asyncio.Event()
    transport = SyslogTransport("127.0.0.1", receiver.port, confirm_after=0.1)
    running = asyncio.create_task(sink(rt, transport).run(stop))
    try:
        await eventually(lambda: _true(len(set(receiver.ids())) == 40), within=15)
        await receiver.down()
        await write(store, 25)  # written while the receiver is away
        await asyncio.sleep(0.3)
        await receiver.up()
        await eventually(lambda: _true(len(set(receiver.ids())) == 65), within=15)
        await eventually(lambda: _true(lag() == 0), within=15)
    finally:
        stop.set()
        await running
        await receiver.down()
    got = receiver.ids()
    assert sorted(set(got)) == await ids_in(store)  # every event, at least once
    firsts = list(dict.fromkeys(got))
    assert firsts == sorted(firsts)  # in order


async def _true(value: bool) -> bool | None:
    return True if value else None
