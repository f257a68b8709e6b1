"""The fake Slack's Socket Mode: a local websocket that delivers envelopes and collects acks.

Slack hands a Socket Mode app a one-off `wss://` URL from `apps.connections.open`, greets the
connection with a `hello`, then sends envelopes (`{"envelope_id", "type", "payload",
"accepts_response_payload"}`) that the app must acknowledge with `{"envelope_id", "payload"?}`
within 3 seconds. This hub does the same on 127.0.0.1, so that slack_sdk's real Socket Mode
client (and bolt on top of it) can be driven from a test.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from typing import Any

from aiohttp import WSMsgType
from aiohttp import web

RESPONSE_PAYLOAD_TYPES = ("slash_commands", "interactive")
"""Envelope types whose ack may carry a payload Slack shows (slash replies, view errors)."""


CONNECT_GRACE = 1.0
"""How long a delivery waits for a client that is still finishing its handshake."""


class SocketModeError(RuntimeError):
    """No client is connected, or the client did not acknowledge an envelope in time."""


class SocketHub:
    """Issues connection URLs, keeps the open websockets, and pairs envelopes with acks."""

    def __init__(self, *, app_id: str) -> None:
        self.app_id = app_id
        self.envelopes: list[dict[str, Any]] = []
        self.acks: list[dict[str, Any]] = []
        self._tickets: set[str] = set()
        self._sockets: list[web.WebSocketResponse] = []
        self._waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._connected = asyncio.Event()

    @property
    def connected(self) -> int:
        """How many Socket Mode connections are open."""
        return len(self._sockets)

    def issue_url(self, ws_base: str) -> str:
        """A URL for `apps.connections.open`; only issued tickets may connect."""
        ticket = uuid.uuid4().hex
        self._tickets.add(ticket)
        return f"{ws_base}?ticket={ticket}&app_id={self.app_id}"

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """The websocket endpoint: hello first, then read acks until the client leaves."""
        if request.query.get("ticket") not in self._tickets:
            raise web.HTTPUnauthorized(text="invalid ticket")
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        await ws.send_json(self._hello())
        self._sockets.append(ws)
        self._connected.set()
        try:
            async for frame in ws:
                if frame.type == WSMsgType.TEXT:
                    self._take_ack(frame.data)
        finally:
            self._forget(ws)
        return ws

    async def deliver(
        self, payload: dict[str, Any], *, type: str, ack_within: float = 5.0
    ) -> dict[str, Any]:
        """Send one envelope to the newest connection and return the client's ack."""
        ws = await self._newest_socket(min(ack_within, CONNECT_GRACE))
        envelope_id = str(uuid.uuid4())
        envelope: dict[str, Any] = {
            "envelope_id": envelope_id,
            "type": type,
            "payload": payload,
            "accepts_response_payload": type in RESPONSE_PAYLOAD_TYPES,
        }
        if type == "events_api":
            envelope.update(retry_attempt=0, retry_reason="")
        waiter = asyncio.get_running_loop().create_future()
        self._waiting[envelope_id] = waiter
        self.envelopes.append(envelope)
        try:
            await ws.send_json(envelope)
            return await asyncio.wait_for(waiter, ack_within)
        except TimeoutError:
            raise SocketModeError(f"no ack for {type} envelope within {ack_within}s") from None
        finally:
            self._waiting.pop(envelope_id, None)

    async def close(self) -> None:
        """Close every connection (the client sees Slack going away) and stop waiting."""
        for waiter in self._waiting.values():
            waiter.cancel()
        for ws in list(self._sockets):
            await ws.close()

    def _hello(self) -> dict[str, Any]:
        return {
            "type": "hello",
            "num_connections": len(self._sockets) + 1,
            "debug_info": {"host": "fake-slack-local", "approximate_connection_time": 18060},
            "connection_info": {"app_id": self.app_id},
        }

    def _take_ack(self, data: str) -> None:
        with contextlib.suppress(ValueError):
            ack = json.loads(data)
            if isinstance(ack, dict) and "envelope_id" in ack:
                self.acks.append(ack)
                waiter = self._waiting.get(str(ack["envelope_id"]))
                if waiter is not None and not waiter.done():
                    waiter.set_result(ack)

    def _forget(self, ws: web.WebSocketResponse) -> None:
        if ws in self._sockets:
            self._sockets.remove(ws)
        if not self._sockets:
            self._connected.clear()

    async def _newest_socket(self, within: float) -> web.WebSocketResponse:
        """The client may still be finishing its handshake: give it a moment to show up."""
        try:
            await asyncio.wait_for(self._connected.wait(), within)
        except TimeoutError:
            raise SocketModeError("no Socket Mode client is connected") from None
        return self._sockets[-1]
