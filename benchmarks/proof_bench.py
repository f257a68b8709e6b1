"""Proof benchmark: what signing a decision's receipt and chaining an audit event cost.

    python benchmarks/proof_bench.py [--rounds 15] [--decisions 2000] [--events 2000]
                                     [--url postgresql://...]

1. Signing, per decision: building a receipt (`runtime.approvals.receipts.document`) and
   signing it with Ed25519 (`runtime.signing.Signer.sign`), against the digest of the
   approval's arguments the decision already computes (the reference), interleaved rounds,
   medians in microseconds.
2. Chaining, per audit event, on SQLite (a real file): `--events` events written in one
   transaction, then chained as the writer does before each commit (`store.chain.seal`),
   each timed per event (the write is the reference). Also the hash alone (canonical content
   and SHA-256), which a verifier pays per event.
3. The audit sink: a backlog of `--sink-events` events delivered to a local HTTP receiver and
   a local TCP syslog receiver that only count, events a second.
4. With `--url`, chaining on PostgreSQL: events written with the chaining trigger and, in a
   scratch schema, with the trigger as it was before the chain (numbering only).

Target: signing and chaining at most 0.2 ms each; the sink at least 5,000 events/s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC
from datetime import datetime
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from runtime.approvals import receipts
from runtime.signing import Signer
from store import Approval
from store import ApprovalState
from store import AuditEvent
from store import Store
from store import open_store
from store.chain import content
from store.chain import link
from store.chain import seal
from store.digest import args_digest

AT = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
ARGS = {"order_id": "4471", "amount_cents": 2500, "restocking_fee_cents": 500}
APPROVAL = Approval(
    id="ap_bench",
    tool="issue_refund",
    args=ARGS,
    policy="refunds",
    run_id="run-bench",
    call_id="call-1",
    idempotency_key="refund:4471:0",
    state=ApprovalState.APPROVED,
    decided_by="U0BOB",
    decided_at=AT,
    requested_by="U0REQ",
)
INSERT = (
    "INSERT INTO audit_events (at, actor, action, run_id, approval_id, detail) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)
DETAIL = {"tool": "issue_refund", "policy": "refunds", "call_id": "call-1", "args": ARGS}
MIGRATIONS = Path(__file__).resolve().parents[1] / "store" / "migrations" / "postgres"


def old_numbering() -> str:
    """The commit-order trigger function as migration 0016 made it, before the audit chain:
    numbering only, no hashing."""
    sql = (MIGRATIONS / "0016_audit_commit_order.sql").read_text("utf-8")
    start = sql.index("CREATE FUNCTION signoff_audit_commit_seq()")
    end = sql.index("$$;", start) + len("$$;")
    return sql[start:end].replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)


def per_call_us(fn: Callable[[], object], calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - started) / calls * 1e6


def signing(rounds: int, decisions: int) -> dict[str, list[float]]:
    signer = Signer(Ed25519PrivateKey.generate())
    found: dict[str, list[float]] = {"sign a receipt": [], "reference: args digest": []}
    for _ in range(rounds):
        found["reference: args digest"].append(per_call_us(lambda: args_digest(ARGS), decisions))
        found["sign a receipt"].append(
            per_call_us(lambda: signer.sign(receipts.document(APPROVAL, [])), decisions)
        )
    return found


def hashing(rounds: int, events: int) -> list[float]:
    def one() -> str:
        return link("0" * 64, content(AT, "U0BOB", "approval_approved", "run", "ap", DETAIL))

    return [per_call_us(one, events) for _ in range(rounds)]


async def write_events(store: Store, events: int) -> float:
    """Microseconds per event, written 100 to a transaction (concurrent writes batch)."""
    started = time.perf_counter()
    for start in range(0, events, 100):
        batch = [
            AuditEvent(action="note", actor="U0", run_id="run", detail=DETAIL, at=AT)
            for _ in range(min(100, events - start))
        ]
        await asyncio.gather(*(store.record_event(event) for event in batch))
    return (time.perf_counter() - started) / events * 1e6


async def sqlite_chaining(rounds: int, events: int) -> dict[str, list[float]]:
    """Per event: writing it (the reference), and chaining it (`store.chain.seal`, what the
    writer runs before each commit), in one transaction per round on a migrated file."""
    found: dict[str, list[float]] = {"write an event": [], "chain it": []}
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "bench.db")
        await (await open_store(f"sqlite:///{path}")).close()
        conn = sqlite3.connect(path, isolation_level=None)
        row = (AT.timestamp(), "U0BOB", "approval_approved", "run", "ap", json.dumps(DETAIL))
        try:
            for _ in range(rounds):
                conn.execute("BEGIN IMMEDIATE")
                started = time.perf_counter()
                conn.executemany(INSERT, [row] * events)
                written = time.perf_counter()
                seal(conn)
                sealed = time.perf_counter()
                conn.execute("COMMIT")
                found["write an event"].append((written - started) / events * 1e6)
                found["chain it"].append((sealed - written) / events * 1e6)
        finally:
            conn.close()
    return found


async def postgres_chaining(url: str, rounds: int, events: int) -> dict[str, list[float]]:
    import asyncpg

    found: dict[str, list[float]] = {"chained": [], "not chained": []}
    schemas = [f"proof_bench_{secrets.token_hex(3)}_{n}" for n in range(2)]
    admin = await asyncpg.connect(url)
    try:
        for schema in schemas:
            await admin.execute(f"CREATE SCHEMA {schema}")
        sep = "&" if "?" in url else "?"
        chained = await open_store(f"{url}{sep}search_path={schemas[0]}")
        plain = await open_store(f"{url}{sep}search_path={schemas[1]}")
        await admin.execute(f"SET search_path = {schemas[1]}; {old_numbering()}")
        try:
            for _ in range(rounds):
                found["chained"].append(await write_events(chained, events))
                found["not chained"].append(await write_events(plain, events))
        finally:
            await chained.close()
            await plain.close()
    finally:
        for schema in schemas:
            await admin.execute(f"DROP SCHEMA {schema} CASCADE")
        await admin.close()
    return found


async def sink_throughput(events: int) -> dict[str, float]:
    """Events a second the sink delivers from a backlog of `events`, over HTTP and syslog
    to receivers on this machine that only count what arrives."""
    from aiohttp import web

    from bot.audit_sink import AuditSink
    from bot.audit_sink import HttpTransport
    from bot.audit_sink import SyslogTransport
    from runtime import Runtime

    found: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as folder:
        store = await open_store(f"sqlite:///{os.path.join(folder, 'sink.db')}")
        try:
            await write_events(store, events)
            received = {"http": 0, "syslog": 0}
            arrived = {name: asyncio.Event() for name in received}

            def got(name: str, count: int) -> None:
                received[name] += count
                if received[name] >= events:
                    arrived[name].set()

            async def count(request: web.Request) -> web.Response:
                got("http", (await request.read()).count(b"\n"))
                return web.Response(status=204)

            async def frames(reader: asyncio.StreamReader, _: asyncio.StreamWriter) -> None:
                while True:
                    try:
                        length = await reader.readuntil(b" ")
                        await reader.readexactly(int(length[:-1]))
                    except (asyncio.IncompleteReadError, ConnectionError):
                        return
                    got("syslog", 1)

            app = web.Application()
            app.router.add_post("/audit", count)
            runner = web.AppRunner(app)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            http_port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            server = await asyncio.start_server(frames, "127.0.0.1", 0)
            syslog_port = server.sockets[0].getsockname()[1]
            transports = {
                "http": HttpTransport(f"http://127.0.0.1:{http_port}/audit", "secret"),
                "syslog": SyslogTransport("127.0.0.1", syslog_port, confirm_after=0.05),
            }
            for name, transport in transports.items():
                rt = Runtime(store, [])
                stop = asyncio.Event()
                sink = AuditSink(rt, transport, name=name, batch=500, poll=0.01)
                started = time.perf_counter()
                task = asyncio.create_task(sink.run(stop))
                await arrived[name].wait()
                found[name] = events / (time.perf_counter() - started)
                stop.set()
                await task
            server.close()
            await runner.cleanup()
        finally:
            await store.close()
    return found


def show(title: str, found: dict[str, list[float]]) -> None:
    print(f"\n{title} (median of {len(next(iter(found.values())))} rounds, microseconds)")
    for name, values in found.items():
        print(f"  {name:<28} {statistics.median(values):9.1f}")


def cost(found: dict[str, list[float]], a: str, b: str) -> float:
    return statistics.median(x - y for x, y in zip(found[a], found[b], strict=True))


async def main(args: argparse.Namespace) -> None:
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    signed = signing(args.rounds, args.decisions)
    show("1. Signing a decision's receipt", signed)
    per_decision = statistics.median(signed["sign a receipt"])
    print(f"  per decision: {per_decision / 1000:.3f} ms (target <= 0.2 ms)")
    python = hashing(args.rounds, args.events)
    print(f"\n2. Chaining an audit event: the hash alone {statistics.median(python):.1f} us")
    sqlite = await sqlite_chaining(args.rounds, args.events)
    show("   SQLite, in one transaction per round", sqlite)
    each = statistics.median(sqlite["chain it"]) / 1000
    print(f"  chaining per audit event (SQLite): {each:.3f} ms (target <= 0.2 ms)")
    rates = await sink_throughput(args.sink_events)
    print(f"\n3. The audit sink, {args.sink_events} events behind (events/s, target >= 5,000)")
    for name, rate in rates.items():
        print(f"  {name:<28} {rate:9,.0f}")
    if args.url:
        postgres = await postgres_chaining(args.url, args.rounds, args.events)
        show("4. PostgreSQL, events written 100 at a time", postgres)
        each = cost(postgres, "chained", "not chained") / 1000
        print(f"  chaining per audit event (PostgreSQL): {each:.3f} ms (target <= 0.2 ms)")


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--decisions", type=int, default=2000)
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--sink-events", type=int, default=20_000)
    parser.add_argument("--url", help="PostgreSQL to measure too")
    return parser.parse_args()


if __name__ == "__main__":
    asyncio.run(main(arguments()))
