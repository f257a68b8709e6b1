"""Home benchmark: a person's App Home at any backlog of pending approvals (issue 40.4).

    python benchmarks/home_bench.py [--rounds 15] [--pending 10000] [--url postgresql://...]

The store holds `--pending` approvals pending for someone else and `--pending` pending for
Bob (his policy names a user group he belongs to), plus 5 pending for Carol. Each round
builds, as `signoff serve` does before `views.publish` (server time, no Slack call):

- Carol's Home: 5 of hers behind 2 x `--pending` of other people's;
- Bob's Home: `--pending` of his, the first 10 listed and the rest counted;
- the reference: the first 10 pending approvals of everyone, oldest first, one indexed read
  (`Store.list_approvals(state=pending, limit=10)`): what this machine takes to read ten
  approvals at all.

The three are interleaved in each round; medians over the rounds, on a SQLite file and,
with `--url`, on PostgreSQL (in a scratch schema, dropped after). Target: each Home in at
most 300 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import statistics
import tempfile
import time
from collections.abc import Awaitable
from collections.abc import Callable
from datetime import UTC
from datetime import datetime
from datetime import timedelta

from bot.slack.home import READ_LIMIT
from bot.slack.home import RECENT
from bot.slack.home import HomeTabs
from runtime import Runtime
from runtime.approvals import StaticDirectory
from store import Approval
from store import ApprovalState
from store import Store
from store import open_store
from store.records import Authority

BOB, CAROL, OTHER, GROUP = "U0BOB", "U0CAROL", "U0OTHER", "S0FINANCE"
AT = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
TARGET_MS = 300.0
REFERENCE = "reference: 10 pending of everyone"


def approval(n: int, approvers: list[str]) -> Approval:
    return Approval(
        id=f"ap{n:07}",
        tool="issue_refund",
        args={"order_id": f"{n}", "amount_cents": 2500},
        requested_by="U0AGENT",
        authority=Authority.of("issue_refund", {"approvers": approvers}),
        created_at=AT + timedelta(milliseconds=n),
    )


async def fill(store: Store, pending: int) -> None:
    """`pending` for someone else, then `pending` for Bob's group, interleaved in time, and
    Carol's 5 last (the most recent: behind everything else)."""
    chunk = 500
    owners = [[OTHER], [GROUP]]
    total = 2 * pending
    for start in range(0, total, chunk):
        batch = [approval(n, owners[n % 2]) for n in range(start, min(start + chunk, total))]
        await asyncio.gather(*(store.create_approval(a) for a in batch))
    for n in range(total, total + 5):
        await store.create_approval(approval(n, [CAROL]))


async def timed(work: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await work()
    return (time.perf_counter() - started) * 1000


async def measure(store: Store, rounds: int, pending: int) -> dict[str, list[float]]:
    rt = Runtime(store, [], worker_id="bench", directory=StaticDirectory({GROUP: {BOB}}))
    home = HomeTabs(rt)
    bob = await rt.queries.pending_for(BOB, rt.directory)
    carol = await rt.queries.pending_for(CAROL, rt.directory)
    assert len(carol.approvals) == carol.waiting == 5, carol
    work: dict[str, Callable[[], Awaitable[object]]] = {
        REFERENCE: lambda: store.list_approvals(state=ApprovalState.PENDING, limit=10),
        "Carol's Home (5 of hers)": lambda: home.view(CAROL),
        "Bob's Home (all of his)": lambda: home.view(BOB),
        "  of which his pending, selected": lambda: rt.queries.pending_for(BOB, rt.directory),
        "  of which his requests, decisions": lambda: rt.queries.approvals_of_person(
            BOB, since=rt.clock() - RECENT, limit=READ_LIMIT
        ),
    }
    times: dict[str, list[float]] = {name: [] for name in work}
    for job in work.values():  # warm: statements prepared, pages cached
        await job()
    for _ in range(rounds):
        for name, job in work.items():
            times[name].append(await timed(job))
    assert bob.waiting == pending, bob.waiting
    return times | {"bob waiting": [float(bob.waiting)]}


def report(title: str, times: dict[str, list[float]], pending: int) -> None:
    reference = statistics.median(times[REFERENCE])
    print(f"\n{title}: {2 * pending + 5:,} pending (median of {len(times[REFERENCE])} rounds, ms)")
    for name, values in times.items():
        if name == "bob waiting":
            continue
        median = statistics.median(values)
        if name == REFERENCE:
            print(f"  {name:38} {median:8.2f}")
            continue
        verdict = "ok" if median <= TARGET_MS else f"over {TARGET_MS:.0f} ms"
        print(f"  {name:38} {median:8.2f}  ratio {median / reference:6.1f}  {verdict}")
    print(f"  Bob's Home counts {int(times['bob waiting'][0]):,} waiting for him")


async def on_sqlite(directory: str, pending: int, rounds: int) -> dict[str, list[float]]:
    store = await open_store(f"sqlite:///{os.path.join(directory, 'home.db')}")
    try:
        await fill(store, pending)
        return await measure(store, rounds, pending)
    finally:
        await store.close()


async def on_postgres(url: str, pending: int, rounds: int) -> dict[str, list[float]]:
    import asyncpg

    schema = f"home_bench_{secrets.token_hex(3)}"
    admin = await asyncpg.connect(url)
    await admin.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in url else "?"
    try:
        store = await open_store(f"{url}{sep}search_path={schema}")
        try:
            await fill(store, pending)
            await admin.execute(f"ANALYZE {schema}.approvals; ANALYZE {schema}.approval_deciders")
            return await measure(store, rounds, pending)
        finally:
            await store.close()
    finally:
        await admin.execute(f"DROP SCHEMA {schema} CASCADE")
        await admin.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--pending", type=int, default=10_000)
    parser.add_argument("--url", default=None, help="a PostgreSQL database to measure too")
    parser.add_argument("--dir", default=None, help="where to put the SQLite file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        times = await on_sqlite(directory, args.pending, args.rounds)
    report("SQLite (a file)", times, args.pending)
    if args.url:
        report("PostgreSQL", await on_postgres(args.url, args.pending, args.rounds), args.pending)


if __name__ == "__main__":
    asyncio.run(main())
