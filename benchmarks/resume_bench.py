"""Decisions to resumed runs through the run queue: a burst of decisions, each timed to its
run's next model call.

    python benchmarks/resume_bench.py [--runs 200] [--rounds 3] [--poll 10] [--capacity 32]
        [--warm 0] [--url postgresql://postgres@127.0.0.1:5432/test]

`--runs` runs park on one approval each (an irreversible tool). Then every decision is made
at once, as a burst of clicks reaches `signoff serve`: `Runtime.decide(..., resume=False)`
(what the Slack listener awaits before its ack) and then `after_decision` (what it runs
after). Each is timed from just before its `decide` to the moment its run's model is
called again (the run claimed from the queue, its state loaded, the approved tool run and
recorded). Printed: p50, p99 and max per round, and the queue's poll interval, the wait a
decision would have without a wake (up to `--poll` seconds, `worker_poll_seconds`).

- SQLite (the default): one process, whose queue (`capacity` runs at once, as `serve`'s
  `worker_capacity`) is woken in-process by each decision.
- `--warm N`: first N more runs are decided and resumed, untimed, as a `serve` that has run
  a while has done: its pooled connections open, their statements prepared and the
  server's caches for them filled. Without it, the burst meets the connections cold, as
  it does after five idle minutes (asyncpg closes a connection idle that long).
- `--url postgresql://...`: the decisions are made through a second store and runtime with
  no queue (another `serve` process, as far as the database can tell), so the worker's queue
  hears of them only through LISTEN/NOTIFY (the decision's outbox row notifies at commit).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field

from approvals_bench import pay  # the same payer's one irreversible tool

from runtime import Agent
from runtime import Runtime
from runtime import ScriptedModel
from runtime import tool_call
from runtime.runs.queue import RunQueue
from runtime.runs.wakeups import RESUMES
from runtime.runs.wakeups import Wakeups
from store import ApprovalState
from store import Message
from store import Store
from store import open_store

resumed_at: dict[str, float] = {}
everyone: dict[int, asyncio.Event] = {}
"""The round's expected count -> set when that many runs have resumed."""


def policy(messages: Sequence[Message]) -> object:
    if messages[-1].role == "tool":
        task = next(m.content for m in messages if m.role == "user")
        resumed_at.setdefault(task, time.perf_counter())
        for count, event in everyone.items():
            if len(resumed_at) >= count:
                event.set()
        return "paid"
    return tool_call("pay", {"amount": 10})


AGENT = Agent("payer", model=ScriptedModel(policy), tools=[pay])


async def fresh(url: str, directory: str, number: int) -> str:
    """A URL naming an empty database for this round."""
    if url.startswith("sqlite"):
        return f"sqlite:///{os.path.join(directory, f'resume-{number}.db')}"
    import asyncpg

    schema = f"resume_bench_{os.getpid()}_{number}"
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}")
    finally:
        await conn.close()
    return f"{url}{'&' if '?' in url else '?'}application_name={APP}&search_path={schema}"


async def drop(url: str) -> None:
    if url.startswith("sqlite"):
        return
    import asyncpg

    base, _, schema = url.rpartition("search_path=")
    conn = await asyncpg.connect(base.rstrip("?&"))
    try:
        await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    finally:
        await conn.close()


class Phases:
    """Timestamps of each run's way from click to model call, by run id (`perf_counter`).

    click: just before `decide`; durable: `decide` returned (the decision committed); heard:
    the worker learned of it (SQLite: the in-process wake; PostgreSQL: the
    `approval_decided` NOTIFY the worker's listener received nearest its `durable`, as a
    NOTIFY names its topic and not its run); claimed: the queue's claim that
    took the run returned (its lease taken in that statement); leased: its driver adopted
    the lease; called: its model was called again."""

    NAMES = ("click", "durable", "heard", "claimed", "leased", "called")

    def __init__(self) -> None:
        self.at: dict[str, dict[str, float]] = {name: {} for name in self.NAMES}
        self.notified: list[float] = []
        self.claims: list[tuple[float, float, int]] = []
        self.cpu = (0.0, 0.0)
        """CPU seconds from the first click to the last model call: this process's, and the
        local PostgreSQL server's processes' (0 on SQLite)."""
        """Each claim statement: started, returned, runs taken."""

    def mark(self, name: str, run_id: str) -> None:
        self.at[name].setdefault(run_id, time.perf_counter())

    def pair_notifications(self) -> None:
        """PostgreSQL: a decision's NOTIFY is the one heard nearest its `durable`, after its
        click (decisions that commit together notify once: a transaction's identical
        notifications are one)."""
        for run_id, durable in self.at["durable"].items():
            click = self.at["click"][run_id]
            heard = [n for n in self.notified if n >= click]
            if heard:
                self.at["heard"][run_id] = min(heard, key=lambda n: abs(n - durable))

    def spans(self) -> dict[str, list[float]]:
        """Each phase's durations over the runs, sorted, seconds."""
        found: dict[str, list[float]] = {}
        for before, after in zip(self.NAMES, self.NAMES[1:], strict=False):
            start, end = self.at[before], self.at[after]
            found[f"{before} -> {after}"] = sorted(end[r] - start[r] for r in start if r in end)
        return found


APP = f"resume_bench_{os.getpid()}"
"""The `application_name` of this benchmark's connections: the server CPU counted is theirs."""


def server_ticks() -> dict[int, int]:
    """CPU ticks used so far by each of this machine's PostgreSQL processes."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            with open(f"/proc/{pid}/stat") as stat:
                text = stat.read()
            if text[text.index("(") + 1 :].startswith(("postgres", "postmaster")):
                fields = text[text.rindex(")") + 2 :].split()
                found[int(pid)] = int(fields[11]) + int(fields[12])  # utime, stime
    return found


async def server_cpu(url: str, before: dict[int, int]) -> float:
    """CPU seconds this benchmark's server processes used since `before` (other processes on
    the server, another suite's say, are not counted); 0 on SQLite or a remote server."""
    if url.startswith("sqlite"):
        return 0.0
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch("SELECT pid FROM pg_stat_activity WHERE application_name = $1", APP)
    finally:
        await conn.close()
    now = server_ticks()
    ticks = sum(now.get(r[0], 0) - before.get(r[0], 0) for r in rows)
    return ticks / os.sysconf("SC_CLK_TCK")


def instrument(worker: Runtime, queue: RunQueue, phases: Phases) -> None:
    """Wrap the worker's claim, lease and wake to timestamp each run's phases."""
    store, deps = worker.store, worker._deps
    claim_runs, lease, wake = store.claim_runs, deps.lease, queue.wake

    async def claimed(*args: object, **kwargs: object) -> object:
        started = time.perf_counter()
        found = await claim_runs(*args, **kwargs)  # type: ignore[arg-type]
        phases.claims.append((started, time.perf_counter(), len(found)))
        for claim in found:
            phases.mark("claimed", claim.run_id)
        return found

    @contextlib.asynccontextmanager
    async def leased(run_id: str) -> AsyncIterator[object]:
        async with lease(run_id) as held:
            phases.mark("leased", run_id)
            yield held

    def woken(*, requeue: bool = False, schema: bool = False, decided: str = "") -> None:
        if decided:
            phases.mark("heard", decided)
        wake(requeue=requeue, schema=schema, decided=decided)

    store.claim_runs = claimed  # type: ignore[method-assign]
    deps.lease = leased  # type: ignore[method-assign,assignment]
    queue.wake = woken  # type: ignore[method-assign]


async def one_round(
    url: str, runs: int, poll: float, capacity: int, *, body: bool = False, warm: int = 0
) -> Phases:
    resumed_at.clear()
    everyone.clear()
    everyone[warm] = asyncio.Event()
    phases = Phases()
    store = await open_store(url)
    worker = Runtime(store, [AGENT], worker_id="worker")
    for i in range(warm + runs):  # parked before the queue runs: each waits on its approval
        await worker.start("payer", f"task {i}", run_id=f"r{i}", requested_by="U0REQ")
    queue = worker.serve_queue(capacity=capacity, poll=poll)
    instrument(worker, queue, phases)
    await worker.recover_into_queue()
    deciders: Store | None = None
    wakeups = None
    if url.startswith("sqlite"):
        decider = worker
    else:  # another process, as the database sees it: the worker hears only the NOTIFY
        wakeups = Wakeups(worker, queue=queue)
        heard = wakeups.heard

        def listened(topic: str) -> None:
            if topic in RESUMES:
                phases.notified.append(time.perf_counter())
            heard(topic)

        wakeups.heard = listened  # type: ignore[method-assign]
        if not await wakeups.start():
            raise SystemExit("the worker could not LISTEN")
        deciders = await open_store(url)
        if body:  # the reference: each decision by `cast_vote`'s transaction
            deciders._decide_at_once = by_transaction  # type: ignore[attr-defined]
        decider = Runtime(deciders, [AGENT], worker_id="decider")
    pending = await decider.approvals(state=ApprovalState.PENDING)
    if len(pending) != warm + runs:
        raise SystemExit("every run must park on its approval")
    if warm:
        await warm_up(decider, worker, queue, [a.id for a in pending[:warm]], poll)
        pending = pending[warm:]
        phases.__init__()  # type: ignore[misc]
        resumed_at.clear()
    everyone.clear()
    everyone[runs] = asyncio.Event()

    async def click(approval_id: str, run_id: str) -> None:
        phases.mark("click", run_id)
        await decide(decider, approval_id, worker, durable=lambda: phases.mark("durable", run_id))

    cpu, server = time.process_time(), server_ticks()
    await asyncio.gather(*(click(a.id, a.run_id or "") for a in pending))
    await asyncio.wait_for(everyone[runs].wait(), poll + 60)
    phases.cpu = (time.process_time() - cpu, await server_cpu(url, server))
    phases.at["called"] = {f"r{task.split()[-1]}": at for task, at in resumed_at.items()}
    if wakeups is not None:
        phases.pair_notifications()
        await wakeups.stop()
    await queue.stop()
    await store.close()
    if deciders is not None:
        await deciders.close()
    return phases


async def warm_up(
    decider: Runtime, worker: Runtime, queue: RunQueue, approval_ids: list[str], poll: float
) -> None:
    """Untimed decisions and their resumes, as a `serve` that has run a while has made:
    every pooled connection opened, its statements prepared and its caches filled. Their
    drives end (checkpoint, lease given back) before the burst."""
    await asyncio.gather(*(decide(decider, a, worker) for a in approval_ids))
    await asyncio.wait_for(everyone[len(approval_ids)].wait(), poll + 60)
    await asyncio.gather(*queue.driving.values(), return_exceptions=True)


async def decide(
    decider: Runtime, approval_id: str, worker: Runtime, durable: Callable[[], None] = lambda: None
) -> None:
    """One click as the Slack listener makes it: the decision recorded (what it awaits before
    its ack), then what it runs after; `durable` is called in between."""
    approval = await decider.decide(approval_id, "approved", by="U0BOSS", resume=False)
    durable()
    await decider.after_decision(approval, resume=decider is worker)


STATEMENT, TRANSACTION = "one statement", "transaction"
"""How a decision is written on PostgreSQL: `decide_at_once`, or the reference, the
transaction of `cast_vote`'s body (eight round trips) that every decision took before it."""


WRITER = "SQLite's writer"


async def by_transaction(_params: object, _event: object) -> None:
    return None


def latencies(phases: Phases) -> list[float]:
    """Click to next model call, each run, sorted."""
    click, called = phases.at["click"], phases.at["called"]
    return sorted(called[r] - click[r] for r in click)


def p99(values: list[float]) -> float:
    return values[max(0, int(len(values) * 0.99) - 1)]


@dataclass
class Tally:
    """One way of deciding's rounds: each round's p99, phases, claims and CPU."""

    p99s: list[float] = field(default_factory=list)
    spans: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    claims: list[str] = field(default_factory=list)
    cpus: list[str] = field(default_factory=list)

    def add(self, phases: Phases) -> list[float]:
        found = latencies(phases)
        self.p99s.append(p99(found))
        for name, values in phases.spans().items():
            if values:
                self.spans.setdefault(name, []).append((statistics.median(values), p99(values)))
        took = [end - start for start, end, _ in phases.claims]
        runs = sum(n for *_, n in phases.claims) / max(1, len(took))
        self.claims.append(
            f"{len(took)} of {statistics.median(took) * 1000:.1f} ms, {runs:.1f} runs"
        )
        self.cpus.append(f"{phases.cpu[0]:.2f} + {phases.cpu[1]:.2f}")
        return found

    def report(self, mode: str) -> None:
        print(f"{mode}: phases, ms (medians over rounds of each round's p50 and p99)")
        for name, pairs in self.spans.items():
            middle = statistics.median(p for p, _ in pairs) * 1000
            high = statistics.median(q for _, q in pairs) * 1000
            print(f"  {name:<20}{middle:>8.1f}{high:>8.1f}")
        print(f"  claim statements a round (each's median, runs each): {'; '.join(self.claims)}")
        print(
            f"  CPU s, first click to last call (this process + its server): {', '.join(self.cpus)}"
        )
        print(f"  p99, median of rounds: {statistics.median(self.p99s) * 1000:.1f} ms")


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--poll", type=float, default=10.0, help="the queue's poll, seconds")
    parser.add_argument("--capacity", type=int, default=32, help="runs the worker drives at once")
    parser.add_argument("--url", default="sqlite", help="postgresql://... (default: SQLite)")
    parser.add_argument(
        "--warm",
        type=int,
        default=0,
        help="first decide this many more runs, untimed, as a serve that has run a while",
    )
    parser.add_argument(
        "--reference", action="store_true", help="interleave rounds deciding by the transaction"
    )
    args = parser.parse_args()
    backend = "sqlite" if args.url.startswith("sqlite") else "postgres"
    modes = [STATEMENT, TRANSACTION] if args.reference else [STATEMENT]
    if backend == "sqlite":  # one writer: the body's transaction, no round trips to save
        modes = [WRITER]
    print(
        f"{backend}: {args.runs} decisions at once, decide -> next model call, ms "
        f"(capacity {args.capacity}, warmed by {args.warm}, "
        f"load average {os.getloadavg()[0]:.1f})"
    )
    print(f"{'round':>5} {'p50':>8} {'p99':>8} {'max':>8}  decided by")
    tallies = {mode: Tally() for mode in modes}
    with tempfile.TemporaryDirectory() as directory:
        for number in range(args.rounds):
            for mode in modes:
                url = await fresh(args.url, directory, number)
                try:
                    phases = await one_round(
                        url,
                        args.runs,
                        args.poll,
                        args.capacity,
                        body=mode == TRANSACTION,
                        warm=args.warm,
                    )
                finally:
                    await drop(url)
                found = tallies[mode].add(phases)
                print(
                    f"{number + 1:>5} {statistics.median(found) * 1000:>8.1f} "
                    f"{p99(found) * 1000:>8.1f} {found[-1] * 1000:>8.1f}  {mode}"
                )
    for mode, tally in tallies.items():
        tally.report(mode)
    print(
        f"target p99 <= 500 ms; without a wake a decision waits for the poll: up to "
        f"{args.poll * 1000:,.0f} ms (load average {os.getloadavg()[0]:.1f})"
    )


if __name__ == "__main__":
    asyncio.run(main())
