"""A worker process of the crash-and-freeze soak (`test_freeze_soak.py`), killed, frozen and
starved of disk by the test:

    python soak_worker.py <store-url> <world-db> <worker-id> <disk-full-flag>

It drives `soaker` runs (a payment that must not run twice, then an idempotent sync) as a
`signoff serve` would: recovery at start, then a takeover each time another worker's lease
lapses. While the file `<disk-full-flag>` exists, every write it makes fails as a full disk
does (nothing written), injected at the storage layer. The tools record what they did in
the world database: `payments` one row per execution, `syncs` one row per idempotency key
(a repeated sync under the same key is the same sync), and `attempts` which worker began each
payment when (wall clock: as it commits the payment `started`, and as its tool begins), so
the soak can tell a page a kill or a freeze explains from one for a result in hand.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sqlite3
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any
from typing import cast

from runtime import Agent
from runtime import Runtime
from runtime import ScriptedModel
from runtime import ToolContext
from runtime import tool
from runtime import tool_call
from store import Batch
from store import Committed
from store import Store
from store import errors
from store import open_store

LEASE = 1.0
TOOL_SECONDS = 0.4
AGENT = "soaker"


def world(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE IF NOT EXISTS payments (key TEXT, worker TEXT)")
    conn.execute("CREATE TABLE IF NOT EXISTS syncs (key TEXT PRIMARY KEY, worker TEXT)")
    conn.execute("CREATE TABLE IF NOT EXISTS attempts (key TEXT, worker TEXT, started REAL)")
    return conn


def record(world_path: str, statement: str, params: tuple[object, ...]) -> None:
    with closing(world(world_path)) as conn:
        conn.execute(statement, params)


def agent(world_path: str, worker: str) -> Agent:
    """The tools write the world off the event loop: a worker frozen inside a world write holds
    its write lock, and a tool waiting for it on the loop would stall this worker whole (no
    lease renewed), so its runs would be taken over and paged for a result it has in hand."""

    async def write(statement: str, *params: object) -> None:
        await asyncio.to_thread(record, world_path, statement, params)

    @tool(description="Pay an order.", effect="irreversible", requires_approval=False)
    async def pay(order: str, *, ctx: ToolContext) -> dict[str, str]:
        key = ctx.idempotency_key
        await write("INSERT INTO attempts VALUES (?, ?, ?)", key, worker, time.time())
        await asyncio.sleep(TOOL_SECONDS)
        await write("INSERT INTO payments VALUES (?, ?)", key, worker)
        return {"receipt": f"re_{order}"}

    @tool(
        description="Sync the ledger.",
        effect="irreversible",
        requires_approval=False,
        idempotent=True,
    )
    async def sync(order: str, *, ctx: ToolContext) -> str:
        await asyncio.sleep(TOOL_SECONDS)
        await write("INSERT OR IGNORE INTO syncs VALUES (?, ?)", ctx.idempotency_key, worker)
        return f"synced {order}"

    script = ScriptedModel(
        [
            lambda t: tool_call("pay", {"order": str(t[0].content)}),
            lambda t: tool_call("sync", {"order": str(t[0].content)}),
            "done",
        ]
    )
    return Agent(AGENT, model=script, tools=[pay, sync])


class InjectedDisk:
    """The store, with every write failing as a full disk while `flag` exists. It also notes
    in the world which worker is about to start each payment (before the commit that writes it
    `started`), so a page for one killed before its tool said a word is put down to the worker
    that began it, not to whichever worker happened to be killed."""

    def __init__(self, store: Store, flag: Path, world_path: str, worker: str) -> None:
        self._store, self._flag = store, flag
        self._world, self._worker = world_path, worker

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def _check(self) -> None:
        if self._flag.exists():
            raise errors.DiskFull("the database's disk is full: nothing was written")

    async def commit(self, batch: Batch) -> Committed:
        self._check()
        for effect in batch.start:
            if effect.tool == "pay":
                params = (effect.idempotency_key, self._worker, time.time())
                statement = "INSERT INTO attempts VALUES (?, ?, ?)"
                await asyncio.to_thread(record, self._world, statement, params)
        return await self._store.commit(batch)

    async def renew_lease(self, *args: Any, **kwargs: Any) -> bool:
        self._check()
        return bool(await self._store.renew_lease(*args, **kwargs))


async def watch_loop() -> None:
    """Log when this worker's event loop was held up (nothing ran, no lease was renewed)."""
    log = logging.getLogger("soak.loop")
    while True:
        before = time.monotonic()
        await asyncio.sleep(0.05)
        late = time.monotonic() - before - 0.05
        if late > 0.2:
            log.warning("the event loop was held up for %.2fs", late)


async def main(url: str, world_path: str, worker: str, flag: str) -> None:
    logging.basicConfig(
        level=logging.INFO,
        format=f"%(created).3f {worker} %(name)s %(levelname)s %(message)s",
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    world(world_path).close()
    async with open_store(url) as store:
        disk = cast(Store, InjectedDisk(store, Path(flag), world_path, worker))
        rt = Runtime(disk, [agent(world_path, worker)], worker_id=worker, lease_ttl=LEASE)
        await rt.recover()
        print("ready", flush=True)
        following = asyncio.create_task(rt.follow_lapses(poll=2 * LEASE))
        watching = asyncio.create_task(watch_loop())
        await stop.wait()
        following.cancel()
        watching.cancel()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
