"""Crash-and-freeze soak (issues 26 and 33), sized for CI: three worker processes on one
database (SQLite, then PostgreSQL) drive runs that pay (must not run twice) then sync
(idempotent), while the test SIGKILLs workers and restarts them, SIGSTOPs one past its lease
and SIGCONTs it, and fills the disk for a while (injected ENOSPC at the storage layer, see
`soak_worker.py`). Runs arrive throughout. Then a person on call settles every open page
from the world's own record, and the figures are printed and asserted:

- 0 duplicate effects (a payment is made once per idempotency key);
- 0 in-doubt pages for the idempotent tool (it is re-run under its key instead);
- each page attributed: to a kill or a freeze of the worker that began the payment (between
  its start and the page; on SQLite also another worker's freeze, but only one that caught it
  holding the database's one write lock, probed as it froze, so that no lease could be
  renewed), or else to a result that worker had in hand; 0 of the latter. The tools write
  the world off the event loop: a worker frozen inside a world write holds that file's lock,
  and waiting for it on the loop would stall a live worker's renewals
  (`test_soak_stall.py`). The disk-full windows are shorter than a third of the lease (the
  renewal interval), so at most one renewal fails in one: a window longer than the lease
  legitimately pages (the worker cannot renew), which is not what this counts;
- every page settleable (its effect is in doubt: `resolve` takes it), and once settled,
  0 runs stuck or failed;
- every completed payment in the ledger is in the world exactly once.

A longer version with its figures: `benchmarks/freeze_soak.py`.
"""

from __future__ import annotations

import asyncio
import os
import random
import secrets
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import closing
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

import pytest
from support.pg_support import fresh_schema_fixture

from runtime import Runtime
from store import EffectStatus
from store import RunStatus
from store import Store
from store import open_store

from .soak_worker import AGENT
from .soak_worker import LEASE
from .soak_worker import agent

pytestmark = pytest.mark.slow

WORKER = Path(__file__).with_name("soak_worker.py")
WORKERS = 3
CHAOS_SECONDS = 8.0
"""At least this long, and until one round of faults (every kind) has happened."""
NEW_RUN_EVERY = 0.35
SETTLE_WITHIN = 40.0
SEED_ENV = "SIGNOFF_SOAK_SEED"


@dataclass
class Fault:
    """A kill (`start == end`) or a freeze of worker `w<slot>`, in wall-clock seconds."""

    slot: int
    start: float
    end: float
    held_write_lock: bool = False
    """A freeze on SQLite that caught the worker inside a write: it held the database's one
    write lock while frozen (another connection could not take it), so no worker could renew."""


@dataclass
class Figures:
    runs: int = 0
    kills: int = 0
    freezes: int = 0
    disk_full: int = 0
    pages: int = 0
    settled: int = 0
    late_evidence: int = 0
    duplicates: int = 0
    idempotent_pages: int = 0
    fault_pages: int = 0
    """Pages a kill or a freeze of the payment's worker explains (no result, or a late one)."""
    stalled_pages: int = 0
    """Of those, SQLite only: another worker's, stalled behind a frozen one that held the
    write lock (`Fault.held_write_lock`); a freeze that held no lock explains none."""
    in_hand_pages: int = 0
    """Pages for a payment whose worker was neither killed nor frozen: it had the result."""
    unsettleable: int = 0
    not_done: Counter[str] = field(default_factory=Counter)
    seed: int = 0
    faults: list[Fault] = field(default_factory=list)
    unexplained: list[str] = field(default_factory=list)
    """The pages for results in hand, for the failure message."""

    def line(self, backend: str) -> str:
        return (
            f"soak[{backend}] seed {self.seed}: {self.runs} runs, {self.kills} SIGKILLs, "
            f"{self.freezes} SIGSTOPs past the lease, {self.disk_full} disk-full windows; "
            f"{self.pages} pages ({self.fault_pages} after a kill or freeze, of which "
            f"{self.stalled_pages} behind a frozen worker's write lock; "
            f"{self.late_evidence} with a fenced worker's evidence), "
            f"{self.settled} settled; {self.duplicates} duplicate effects, "
            f"{self.idempotent_pages} in-doubt pages for the idempotent tool, "
            f"{self.in_hand_pages} in-doubt pages for results in hand, "
            f"{self.unsettleable} unsettleable pages, "
            f"{sum(self.not_done.values())} runs not done after settling"
        )


class Fleet:
    def __init__(self, url: str, world: Path, tmp: Path) -> None:
        self.url, self.world, self.tmp = url, world, tmp
        self.flag = tmp / "disk-full"
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.lives: Counter[int] = Counter()

    def sqlite_file(self) -> Path | None:
        return Path(self.url.removeprefix("sqlite:///")) if self.url.startswith("sqlite") else None

    def start(self, slot: int) -> None:
        self.lives[slot] += 1
        args = [sys.executable, str(WORKER), self.url, str(self.world), f"w{slot}", str(self.flag)]
        with (self.tmp / f"worker-{slot}-{self.lives[slot]}.log").open("wb") as log:
            self.procs[slot] = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)

    def kill(self, slot: int) -> None:
        proc = self.procs[slot]
        proc.send_signal(signal.SIGCONT)  # a frozen one dies too
        proc.kill()
        proc.wait()

    def stop_all(self) -> None:
        for proc in self.procs.values():
            proc.send_signal(signal.SIGCONT)
            proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


async def chaos(fleet: Fleet, rt: Runtime, rng: random.Random, figures: Figures) -> None:
    """Start runs throughout; every so often kill, freeze or starve a worker of disk."""
    end = time.monotonic() + CHAOS_SECONDS
    next_fault = time.monotonic() + rng.uniform(0.8, 1.6)
    while time.monotonic() < end or faults_done(figures) < len(FAULTS):
        figures.runs += 1
        await rt.create(AGENT, f"order-{figures.runs}", run_id=f"run-{figures.runs}")
        if time.monotonic() >= next_fault:
            await fault(fleet, rng, figures)
            next_fault = time.monotonic() + rng.uniform(0.8, 1.6)
        await asyncio.sleep(NEW_RUN_EVERY)


FAULTS = ["kill", "kill", "freeze", "disk"]
"""One round of faults, in a random order each round: every kind happens."""


def faults_done(figures: Figures) -> int:
    return figures.kills + figures.freezes + figures.disk_full


async def fault(fleet: Fleet, rng: random.Random, figures: Figures) -> None:
    slot = rng.randrange(WORKERS)
    done = faults_done(figures)
    if done % len(FAULTS) == 0:
        rng.shuffle(FAULTS)
    kind = FAULTS[done % len(FAULTS)]
    if kind == "kill":
        figures.kills += 1
        figures.faults.append(Fault(slot, time.time(), time.time()))
        fleet.kill(slot)
        fleet.start(slot)
    elif kind == "freeze":
        figures.freezes += 1
        start = time.time()
        fleet.procs[slot].send_signal(signal.SIGSTOP)
        frozen = asyncio.sleep(LEASE + rng.uniform(0.5, 1.5))  # past its lease: taken over
        db = fleet.sqlite_file()
        held = False if db is None else await asyncio.to_thread(write_lock_held, db)
        await frozen
        fleet.procs[slot].send_signal(signal.SIGCONT)
        figures.faults.append(Fault(slot, start, time.time(), held_write_lock=held))
    else:
        figures.disk_full += 1
        fleet.flag.touch()
        # Shorter than the renewal interval (a third of the lease): one renewal fails at most.
        # A window past the lease pages by rights (the worker cannot renew), not for a bug.
        await asyncio.sleep(rng.uniform(0.1, 0.3) * LEASE)
        fleet.flag.unlink()


async def all_ended(store: Store, count: int) -> None:
    deadline = time.monotonic() + SETTLE_WITHIN
    while time.monotonic() < deadline:
        runs = await store.list_runs(limit=10_000)
        if len(runs) == count and all(r.status in ("done", "failed") for r in runs):
            return
        await asyncio.sleep(0.2)
    statuses = Counter(r.status.value for r in await store.list_runs(limit=10_000))
    raise AssertionError(f"runs not ended within {SETTLE_WITHIN}s: {dict(statuses)}")


def attempts(world: Path) -> dict[str, tuple[int, float]]:
    """Each payment key's last note of an attempt: the slot of the worker that began it (it
    notes so before writing the payment `started`, and again as its tool begins), and when."""
    with closing(sqlite3.connect(world, timeout=30)) as conn:
        rows = conn.execute("SELECT key, worker, started FROM attempts ORDER BY started")
        return {key: (int(worker[1:]), started) for key, worker, started in rows}


MARGIN = 0.1
"""Seconds of slack between the test's clock readings and the workers' (one machine)."""


def explained(faults: list[Fault], slot: int | None, start: float, paged: float) -> bool:
    """Whether a kill or freeze of this slot (any slot if unknown) falls in [start, paged]."""
    return any(
        (slot is None or f.slot == slot) and f.start <= paged + MARGIN and f.end >= start - MARGIN
        for f in faults
    )


LOCK_WAIT = 0.5
"""How long the probe waits for SQLite's write lock: a live worker holds it for milliseconds."""


def write_lock_held(db: Path) -> bool:
    """Whether some process holds the database's write lock for longer than LOCK_WAIT: probed
    right after a SIGSTOP, the frozen worker (caught inside a write) is the one holding it."""
    with closing(sqlite3.connect(db, timeout=LOCK_WAIT, isolation_level=None)) as conn:
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError:  # database is locked
            return True
        conn.execute("ROLLBACK")
        return False


def stalled(faults: list[Fault], start: float, paged: float) -> bool:
    """Whether another worker was frozen meanwhile holding SQLite's one write lock (probed,
    not assumed): then no worker could renew its lease until that one was thawed."""
    freezes = [f for f in faults if f.held_write_lock]
    return explained(freezes, None, start, paged)


def world_rows(world: Path) -> tuple[Counter[str], set[str]]:
    with closing(sqlite3.connect(world, timeout=30)) as conn:
        payments = Counter(key for (key,) in conn.execute("SELECT key FROM payments"))
        syncs = {key for (key,) in conn.execute("SELECT key FROM syncs")}
    return payments, syncs


async def settle(
    store: Store, rt: Runtime, world: Path, figures: Figures, *, one_write_lock: bool
) -> None:
    """The person on call: for each open page, what the world says happened, in one step."""
    payments, _ = world_rows(world)
    began = attempts(world)
    pages = await store.list_pages()
    figures.pages = len(pages)
    for page in pages:
        assert page.run_id is not None
        assert page.call_id is not None
        effect = await store.get_effect(page.run_id, page.call_id)
        figures.late_evidence += "lost its lease" in page.detail
        figures.idempotent_pages += effect.tool == "sync"
        # The worker that began it noted so before writing it `started` (see soak_worker).
        slot, start = began.get(effect.idempotency_key, (None, effect.started_at.timestamp()))
        paged = page.created_at.timestamp()
        if explained(figures.faults, slot, start, paged):
            figures.fault_pages += 1
        elif one_write_lock and stalled(figures.faults, start, paged):
            figures.fault_pages += 1
            figures.stalled_pages += 1
        else:
            figures.in_hand_pages += 1
            figures.unexplained.append(
                f"{page.run_id}/{page.call_id} began on slot {slot} at {start:.2f}, "
                f"paged at {paged:.2f}: {page.detail[:160]}"
            )
        if effect.status != EffectStatus.IN_DOUBT:
            figures.unsettleable += 1
            continue
        happened = payments[effect.idempotency_key] > 0
        await rt.resolve(page.run_id, page.call_id, happened=happened, by="U_ONCALL")
        await rt.resume(page.run_id)
        figures.settled += 1


async def soak(url: str, tmp: Path) -> Figures:
    seed = int(os.environ.get(SEED_ENV) or secrets.randbits(20))
    rng, figures = random.Random(seed), Figures()
    world = tmp / "world.db"
    fleet = Fleet(url, world, tmp)
    async with open_store(url) as store:
        rt = Runtime(store, [agent(str(world), "on-call")], worker_id="on-call")
        try:
            for slot in range(WORKERS):
                fleet.start(slot)
            await chaos(fleet, rt, rng, figures)
            await all_ended(store, figures.runs)
        finally:
            fleet.flag.unlink(missing_ok=True)
            fleet.stop_all()
        await settle(store, rt, world, figures, one_write_lock=url.startswith("sqlite"))
        runs = await store.list_runs(limit=10_000)
        figures.not_done = Counter(r.status.value for r in runs if r.status != RunStatus.DONE)
        payments, syncs = world_rows(world)
        figures.duplicates = sum(n - 1 for n in payments.values() if n > 1)
        for run in runs:
            for effect in await store.list_effects(run.id):
                if effect.tool == "pay" and effect.status == EffectStatus.COMPLETED:
                    assert payments[effect.idempotency_key] == 1, (seed, effect)
                if effect.tool == "sync" and effect.status == EffectStatus.COMPLETED:
                    assert effect.idempotency_key in syncs, (seed, effect)
    figures.seed = seed
    (tmp / "faults.txt").write_text(
        "".join(f"{f.slot} {f.start:.3f} {f.end:.3f} {f.held_write_lock}\n" for f in figures.faults)
    )
    return figures


def check(figures: Figures) -> None:
    assert min(figures.kills, figures.freezes, figures.disk_full) >= 1, figures
    assert figures.duplicates == 0, figures
    assert figures.idempotent_pages == 0, figures
    assert figures.in_hand_pages == 0, figures.unexplained
    assert figures.unsettleable == 0, figures
    assert figures.not_done == Counter(), figures


async def test_soak_on_sqlite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    figures = await soak(f"sqlite:///{tmp_path / 'signoff.db'}", tmp_path)
    with capsys.disabled():
        print("\n" + figures.line("sqlite"))
    check(figures)


@pytest.fixture
async def pg_schema() -> AsyncIterator[str]:
    async for url in fresh_schema_fixture("signoff_soak"):
        yield url


async def test_soak_on_postgres(
    pg_schema: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    figures = await soak(pg_schema, tmp_path)
    with capsys.disabled():
        print("\n" + figures.line("postgres"))
    check(figures)
