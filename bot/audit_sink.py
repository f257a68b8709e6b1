"""Audit out, as it happens: every audit event streamed to an HTTP endpoint (NDJSON, signed
as decision callbacks are) or a syslog server (RFC 5424 over TCP, octet-counted frames), at
least once and in commit order, from a durable cursor in the database.

One process streams a sink at a time (it holds the sink's lease in the database; another
takes over when it lapses). A batch is read after the cursor, sent, and only then is the
cursor moved past it (compare-and-set), so a crash or restart sends again at most the batch
in flight, never skips one. A receiver that is down is retried with capped, jittered
backoff; `signoff_audit_sink_lag_events` says how far behind the sink is.

HTTP: `POST` of the events as JSON Lines (the export's records, with their hashes),
`X-Signoff-Timestamp` and `X-Signoff-Signature` (`v1=` HMAC-SHA256 of `v1:<ts>:<body>` with
the sink's secret); any 2xx is delivery, anything else is retried. The receiver dedupes by
each event's `id` (or `hash`).

Syslog: TCP has no acknowledgement, so a batch counts as delivered once the next one was
written on the same connection, or the connection stayed open `confirm` seconds after it; a
connection lost before that sends it again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from datetime import UTC
from typing import Protocol
from urllib.parse import urlsplit

from bot import audit_export
from bot.callbacks import sign
from bot.masking import ResultMasks
from bot.masking import masked_events
from bot.metrics import AUDIT_SINK_DELIVERED
from bot.metrics import AUDIT_SINK_FAILURES
from bot.metrics import AUDIT_SINK_LAG
from runtime import Runtime
from runtime.history import SinkLease
from runtime.records import AuditEvent

log = logging.getLogger("signoff.audit_sink")
SYSLOG_SCHEMES = ("syslog", "syslog+tcp", "tcp")
FACILITY_AUDIT = 13  # RFC 5424 "log audit"
SEVERITY_INFO = 6
ENTERPRISE = "signoff@32473"  # the SD-ID of the structured data (32473: the example PEN)


class Transport(Protocol):
    confirm_after: float
    """Seconds after a batch is sent before it counts as delivered, the connection still
    healthy then (0: sending is delivery, as an HTTP 2xx is)."""

    async def send(self, events: Sequence[AuditEvent], lines: Sequence[str]) -> None:
        """Send a batch or raise."""

    def healthy(self) -> bool: ...

    async def close(self) -> None: ...


class HttpTransport:
    confirm_after = 0.0

    def __init__(self, url: str, secret: str, *, timeout: float = 10.0) -> None:
        import aiohttp

        self.url = url
        self.secret = secret
        self.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout))

    async def send(self, events: Sequence[AuditEvent], lines: Sequence[str]) -> None:
        body = "".join(lines).encode()
        stamp = str(int(time.time()))
        headers = {
            "Content-Type": "application/x-ndjson",
            "X-Signoff-Timestamp": stamp,
            "X-Signoff-Signature": sign(self.secret, stamp, body),
        }
        async with self.session.post(self.url, data=body, headers=headers) as answer:
            if not 200 <= answer.status < 300:
                raise ConnectionError(f"the receiver answered {answer.status}")

    def healthy(self) -> bool:
        return True

    async def close(self) -> None:
        await self.session.close()


class SyslogTransport:
    def __init__(self, host: str, port: int, *, confirm_after: float = 0.2) -> None:
        self.host, self.port, self.confirm_after = host, port, confirm_after
        self.hostname = socket.gethostname()[:255] or "-"
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def send(self, events: Sequence[AuditEvent], lines: Sequence[str]) -> None:
        if self._streams is None:
            self._streams = await asyncio.open_connection(self.host, self.port)
        if not self.healthy():
            await self.close()
            raise ConnectionError("the syslog server closed the connection")
        _, writer = self._streams
        frames = b"".join(self._frame(e, line) for e, line in zip(events, lines, strict=True))
        try:
            writer.write(frames)
            await writer.drain()
        except OSError:
            await self.close()
            raise

    def healthy(self) -> bool:
        """Connected, and the server neither closed nor reset the connection (a syslog
        server never writes back, so anything it did is the end)."""
        if self._streams is None:
            return False
        reader, writer = self._streams
        return not (reader.at_eof() or reader.exception() or writer.is_closing())

    def _frame(self, event: AuditEvent, line: str) -> bytes:
        """One RFC 5424 message, octet-counted (RFC 6587)."""
        pri = FACILITY_AUDIT * 8 + SEVERITY_INFO
        stamp = event.at.astimezone(UTC).isoformat().replace("+00:00", "Z")
        msgid = "".join(c for c in event.action if 33 <= ord(c) <= 126)[:32] or "-"
        data = f'[{ENTERPRISE} id="{event.id}" hash="{event.hash or "-"}"]'
        head = f"<{pri}>1 {stamp} {self.hostname} signoff - {msgid} {data} "
        message = head.encode() + b"\xef\xbb\xbf" + line.rstrip("\n").encode()
        return str(len(message)).encode() + b" " + message

    async def close(self) -> None:
        if self._streams is not None:
            _, writer = self._streams
            self._streams = None
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()


def transport_for(url: str, secret: str) -> Transport:
    parts = urlsplit(url)
    if parts.scheme in ("http", "https"):
        return HttpTransport(url, secret)
    if parts.scheme in SYSLOG_SCHEMES and parts.hostname:
        return SyslogTransport(parts.hostname, parts.port or 514)
    raise ValueError(f"{url!r}: an audit sink is an http(s):// URL or syslog://host:port")


@dataclass
class AuditSink:
    """Streams the audit trail to `transport` until stopped."""

    rt: Runtime
    transport: Transport
    name: str = "default"
    batch: int = 500
    poll: float = 1.0
    max_delay: float = 30.0
    lease_ttl: float = 30.0
    _sent: int = 0
    _unconfirmed: list[tuple[float, int]] = field(default_factory=list)

    async def run(self, stop: asyncio.Event) -> None:
        lease = self.rt.audit_sink(self.name, ttl=self.lease_ttl)
        masks = ResultMasks(self.rt.policies)
        failures = 0
        try:
            while not stop.is_set():
                try:
                    busy = await self._round(lease, masks)
                    failures = 0
                except Exception as exc:  # the receiver, the network: retried
                    failures += 1
                    AUDIT_SINK_FAILURES.inc()
                    log.warning("audit sink %s: %s (attempt %d)", self.name, exc, failures)
                    await _wait(stop, self._backoff(failures))
                    continue
                if not busy:
                    await _wait(stop, min(self.poll, self.transport.confirm_after or self.poll))
        finally:
            await self.transport.close()
            await lease.release()

    async def _round(self, lease: SinkLease, masks: ResultMasks) -> bool:
        """Confirm what was sent long enough ago, then send the next batch; False when
        there was nothing to send."""
        start = await lease.claim()
        if start is None:  # another process streams this sink
            self._unconfirmed.clear()
            return False
        start = await self._confirm(lease, start)
        AUDIT_SINK_LAG.set(await lease.lag(start))
        found = await self.rt.queries.audit(after=self._sent, limit=self.batch)
        if not found:
            return False
        shown = await masked_events(self.rt.queries, found, masks)
        hidden = frozenset(a.id for a, b in zip(found, shown, strict=True) if a != b and a.id)
        try:
            await self.transport.send(shown, list(audit_export.jsonl(shown, masked=hidden)))
        except BaseException:
            self._resend_from(start)
            raise
        self._sent = found[-1].id or self._sent
        self._unconfirmed.append((time.monotonic(), self._sent))
        if self.transport.confirm_after == 0:
            await self._confirm(lease, start)
        return True

    async def _confirm(self, lease: SinkLease, start: int) -> int:
        """Move the durable cursor past what counts as delivered; the cursor."""
        if self._sent < start or not self._unconfirmed:
            self._sent = max(self._sent, start)  # (a lease taken over: what it delivered)
            self._unconfirmed.clear()
            return start
        now = time.monotonic()
        due = [last for at, last in self._unconfirmed if now - at >= self.transport.confirm_after]
        if not due:
            return start
        if not self.transport.healthy():
            self._resend_from(start)
            await self.transport.close()
            return start
        if await lease.advance(start, due[-1]):
            AUDIT_SINK_DELIVERED.inc(due[-1] - start)
            self._unconfirmed = [(at, last) for at, last in self._unconfirmed if last > due[-1]]
            return due[-1]
        self._resend_from(start)  # the cursor moved elsewhere: read it again
        return start

    def _resend_from(self, start: int) -> None:
        self._sent = start
        self._unconfirmed.clear()

    def _backoff(self, failures: int) -> float:
        delay = min(self.max_delay, 0.25 * 2 ** min(failures, 10))
        return float(delay * random.uniform(0.5, 1.0))


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)


def describe(url: str) -> str:
    """The sink as a log line may name it (no credentials in a URL)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}"
