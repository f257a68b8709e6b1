"""Slack bot benchmark: ack latency of concurrent Approve clicks, and click -> next model call.

    python benchmarks/bot_bench.py [--runs 200] [--rounds 5] [--stall 2]

`signoff serve` runs as a real process (SQLite file, the refund agent) against the local fake
Slack in another process, as in the end-to-end tests. Each round parks `--runs` new refund
runs on their approval (one card each in the fake) and waits until the outbox is empty; then,
back to back, `--runs` requests at once, each on its own connection (as Slack opens them):

1. `GET /healthz`, unsigned: the HTTP floor of this machine (server and client share it);
2. the reference: signed `/runs help` commands, which the same server answers from memory
   (bolt's signature check, dispatch and ack; no store);
3. signed Approve clicks, one per card.

An ack's latency runs from just before its request is sent to its HTTP response (Slack allows
3 s). Click -> next model call runs from the click's send time (wall clock) to the
`created_at` of the run's first checkpoint after it that holds a model reply, read from the
store's SQLite file; in between, the run resumes and the approved refund is issued. Every run
must then finish with exactly one refund. A small unmeasured round warms the server up first.
Printed: per metric, the medians over rounds of each round's median, p99 (nearest rank) and
maximum, and each round's p99; then click p50 / reference p50.

`--stall S`: the database stalls for S seconds as the clicks arrive: another connection takes
SQLite's write lock (`BEGIN IMMEDIATE`) just before the burst and holds it S seconds, so every
decision waits for it. The acks must not (the listeners answer Slack within `ACK_WITHIN` and
tell the person later); every decision is still recorded once the lock goes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from slack_sdk.signature import SignatureVerifier

REPO = Path(__file__).resolve().parents[1]
# the end-to-end harness lives in tests/, which is not installed
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from support.helpers import SIGNOFF  # noqa: E402
from support.helpers import free_port  # noqa: E402
from support.slack_harness import BOB  # noqa: E402
from support.slack_harness import POLICY  # noqa: E402
from support.slack_harness import REQUESTER  # noqa: E402
from support.slack_harness import SIGNING_SECRET  # noqa: E402
from support.slack_harness import FakeSlackProcess  # noqa: E402
from support.slack_harness import SlackServer  # noqa: E402
from support.slack_harness import approval_id_of  # noqa: E402
from support.slack_harness import button  # noqa: E402
from support.slack_harness import environment  # noqa: E402
from support.slack_harness import slash  # noqa: E402

from examples import world  # noqa: E402

SLACK_ACK_LIMIT = 3.0
SETTLE_TIMEOUT = 120.0
WARM_UP = 10
PAUSE = 0.2
"""Seconds between bursts, for the sockets of the last one to close."""

Request = tuple[bytes | None, dict[str, str]]
"""A body to POST (None: a GET) and its headers."""


@dataclass(frozen=True)
class Ack:
    status: int
    seconds: float
    sent_at: float
    """Wall clock (time.time()) just before the request was sent."""


@dataclass(frozen=True)
class Round:
    """Seconds per request of one round, by metric, and how it ended."""

    metrics: dict[str, list[float]]
    ratio: float
    late: int
    refunds: int


METRICS = {
    "clicks": "Approve click ack",
    "reference": "/runs help ack (reference)",
    "http": "GET /healthz (HTTP floor)",
    "next_call": "click -> next model call",
}


class Bench:
    """The fake Slack and `signoff serve` on files in `directory`, and what a round needs."""

    def __init__(self, directory: Path, fake: FakeSlackProcess, server: SlackServer) -> None:
        self.db = directory / "signoff.db"
        self.fake = fake
        self.server = server

    def round(self, number: int, runs: int, stall: float = 0.0) -> Round:
        run_ids = [f"bench-{number}-{i}" for i in range(runs)]
        cards = self.park(number, run_ids)
        http = self.burst("/healthz", [(None, {})] * runs)
        reference = self.burst("/slack/events", [signed(slash("help", user=BOB))] * runs)
        clicks = [signed(button("approve", a, user=BOB, ts=ts)) for a, ts in cards.items()]
        with self.stalled(stall):
            acks = self.burst("/slack/events", clicks)
        self.wait_until(lambda: self.count_status(run_ids, "done") == runs, "every run done")
        sent = dict(zip(cards, (a.sent_at for a in acks), strict=True))
        metrics = {
            "clicks": [a.seconds for a in acks],
            "reference": [a.seconds for a in reference],
            "http": [a.seconds for a in http],
            "next_call": self.click_to_next_model_call(sent),
        }
        return Round(
            metrics=metrics,
            ratio=statistics.median(metrics["clicks"]) / statistics.median(metrics["reference"]),
            late=sum(a.seconds > SLACK_ACK_LIMIT for a in acks),
            refunds=self.check_refunds(number, runs),
        )

    def burst(self, path: str, requests: list[Request]) -> list[Ack]:
        time.sleep(PAUSE)
        acks = asyncio.run(burst(self.server.base + path, requests))
        failed = Counter(a.status for a in acks if a.status != 200)
        if failed:
            raise SystemExit(f"{path}: {sum(failed.values())} not answered 200: {dict(failed)}")
        return acks

    def park(self, number: int, run_ids: list[str]) -> dict[str, str]:
        """Start the runs; once each waits on its card and the outbox is empty, the card ts of
        each approval."""
        for i, run_id in enumerate(run_ids):
            task = f"Refund order R{number}N{i}"
            start = {"agent": "refund-agent", "task": task, "run_id": run_id}
            status, view = self.server.api("POST", "/v1/runs", start | {"requested_by": REQUESTER})
            if status != 201:
                raise SystemExit(f"starting {run_id}: {status} {view}")
        self.wait_until(
            lambda: (
                self.count_status(run_ids, "waiting_approval") == len(run_ids)
                and self.unsent() == 0
            ),
            "every run parked and its card posted",
        )
        found = self.query(
            "SELECT id FROM approvals WHERE state = 'pending' AND run_id LIKE ?",
            (f"bench-{number}-%",),
        )
        pending = {approval_id for (approval_id,) in found}
        cards = {approval_id_of(c): str(c["ts"]) for c in self.fake.cards()}
        missing = pending - cards.keys()
        if len(pending) != len(run_ids) or missing:
            raise SystemExit(f"{len(pending)} pending approvals, {len(missing)} without a card")
        return {a: cards[a] for a in sorted(pending)}

    def click_to_next_model_call(self, sent: dict[str, float]) -> list[float]:
        """Per clicked approval: its run's first model reply checkpointed after the click (the
        checkpoints before it mark the resume and hold the refund's result)."""
        latencies = []
        for approval_id, sent_at in sent.items():
            [(run_id,)] = self.query("SELECT run_id FROM approvals WHERE id = ?", (approval_id,))
            rows = self.query(
                "SELECT created_at, messages FROM checkpoints "
                "WHERE run_id = ? AND created_at > ? ORDER BY seq",
                (run_id, sent_at),
            )
            replied = [at for at, messages in rows if _has_reply(messages)]
            if not replied:
                raise SystemExit(f"run {run_id}: no model reply after the click")
            latencies.append(replied[0] - sent_at)
        return latencies

    def check_refunds(self, number: int, runs: int) -> int:
        """Exactly one refund per order of this round."""
        prefix = f"R{number}N"
        payments = world.payments()
        refunded = Counter(
            r for kind, r, _, _ in payments if kind == "refund" and r.startswith(prefix)
        )
        twice = sorted(ref for ref, times in refunded.items() if times > 1)
        if twice or set(refunded) != {f"{prefix}{i}" for i in range(runs)}:
            raise SystemExit(f"round {number}: {len(refunded)} orders refunded, twice: {twice}")
        return sum(refunded.values())

    @contextmanager
    def stalled(self, seconds: float) -> Iterator[None]:
        """The database's write lock held by another connection for `seconds` from now."""
        if seconds <= 0:
            yield
            return
        taken = threading.Event()

        def hold() -> None:
            with sqlite3.connect(self.db, timeout=30, isolation_level=None) as conn:
                conn.execute("BEGIN IMMEDIATE")
                taken.set()
                time.sleep(seconds)
                conn.execute("COMMIT")

        holder = threading.Thread(target=hold, name="stall")
        holder.start()
        taken.wait(30)
        try:
            yield
        finally:
            holder.join()

    # the store, read-only, beside the running server

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=30) as conn:
            return conn.execute(sql, params).fetchall()

    def count_status(self, run_ids: list[str], status: str) -> int:
        marks = ",".join("?" * len(run_ids))
        sql = f"SELECT count(*) FROM runs WHERE status = ? AND id IN ({marks})"
        return int(self.query(sql, [status, *run_ids])[0][0])

    def unsent(self) -> int:
        return int(self.query("SELECT count(*) FROM outbox WHERE sent_at IS NULL")[0][0])

    def wait_until(self, check: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while not check():
            if self.server.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{what}: not within {SETTLE_TIMEOUT:.0f} s\n{self.log_tail()}")
            time.sleep(0.05)

    # the server's log

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.server.log.read_text("utf-8", "replace").splitlines()[-lines:])

    def log_problems(self) -> list[str]:
        text = self.server.log.read_text("utf-8", "replace")
        return [line for line in text.splitlines() if "ERROR" in line or "Traceback" in line]


@contextmanager
def running(directory: Path, policy: str = POLICY) -> Iterator[Bench]:
    """The fake Slack, then `signoff serve` pointed at it (`policy`: its signoff.toml), as the
    end-to-end tests start them; both stopped on the way out, whatever happened."""
    world_db = directory / "world.db"
    os.environ["SIGNOFF_WORLD_DB"] = str(world_db)  # world.payments() reads it here too
    fake = FakeSlackProcess(directory)
    try:
        server = serve(directory, world_db, fake.base_url, policy)
        try:
            yield Bench(directory, fake, server)
        finally:
            if server.process.poll() is None:
                server.stop()
    finally:
        fake.stop()


def serve(directory: Path, world_db: Path, slack_url: str, policy: str = POLICY) -> SlackServer:
    """`signoff serve` with the end-to-end tests' settings and `policy`, killed if it does not
    come up."""
    (directory / "signoff.toml").write_text(policy, "utf-8")
    port = free_port()
    log = directory / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [SIGNOFF, "serve"],
            cwd=directory,
            env=environment(directory, world_db, port, slack_url),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    server = SlackServer(process, port, log)
    try:
        server.wait_until(server.healthy, within=20)
    except BaseException:
        server.kill()
        raise
    return server


def _has_reply(messages: str) -> bool:
    return any(m.get("role") == "assistant" for m in json.loads(messages))


def signed(body: bytes) -> Request:
    """The body with the headers Slack sends: `v0:` + timestamp + body, HMAC-SHA256."""
    stamp = str(int(time.time()))
    signature = SignatureVerifier(SIGNING_SECRET).generate_signature(timestamp=stamp, body=body)
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": signature,
    }
    return body, headers


async def burst(url: str, requests: list[Request]) -> list[Ack]:
    """Send every request at once, each on its own connection; their acks, in order."""
    connector = aiohttp.TCPConnector(limit=0, force_close=True)
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        return await asyncio.gather(*(_send(session, url, *r) for r in requests))


async def _send(
    session: aiohttp.ClientSession, url: str, body: bytes | None, headers: dict[str, str]
) -> Ack:
    method = "GET" if body is None else "POST"
    sent_at, started = time.time(), time.perf_counter()
    try:
        async with session.request(method, url, data=body, headers=headers) as response:
            await response.read()
            status = response.status
    except (aiohttp.ClientError, TimeoutError):
        status = 0
    return Ack(status, time.perf_counter() - started, sent_at)


def p99(values: Sequence[float]) -> float:
    """Nearest rank."""
    ordered = sorted(values)
    return ordered[max(math.ceil(len(ordered) * 0.99) - 1, 0)]


def report(runs: int, rounds: list[Round]) -> None:
    print(
        f"{runs} requests at once per burst, {len(rounds)} rounds; ms, medians over rounds "
        "of each round's p50, p99 and max"
    )
    print(f"{'':<27} {'p50':>7} {'p99':>7} {'max':>7}   p99 by round")
    for key, label in METRICS.items():
        p50s, p99s, maxes = [], [], []
        for r in rounds:
            values = [v * 1000 for v in r.metrics[key]]
            p50s.append(statistics.median(values))
            p99s.append(p99(values))
            maxes.append(max(values))
        by_round = " ".join(f"{v:.0f}" for v in p99s)
        print(
            f"{label:<27} {statistics.median(p50s):>7.1f} {statistics.median(p99s):>7.1f} "
            f"{statistics.median(maxes):>7.1f}   {by_round}"
        )
    ratios = [r.ratio for r in rounds]
    print(
        f"click ack p50 / reference p50: {statistics.median(ratios):.2f} "
        f"(by round: {' '.join(f'{r:.2f}' for r in ratios)})"
    )
    total = runs * len(rounds)
    print(
        f"acks over Slack's 3 s: {sum(r.late for r in rounds)} of {total}; refunds: "
        f"{sum(r.refunds for r in rounds)} for {total} runs, none twice"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="parked runs, clicked at once")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", default=None, help="where to put the database files")
    parser.add_argument("--stall", type=float, default=0.0, help="seconds the database stalls")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(dir=args.dir) as directory,
        running(Path(directory)) as bench,
    ):
        bench.round(0, min(WARM_UP, args.runs))  # first requests pay for imports and caches
        rounds = [
            bench.round(number, args.runs, args.stall) for number in range(1, args.rounds + 1)
        ]
        problems = bench.log_problems()
    if args.stall:
        print(
            f"the database stalled {args.stall:g} s (write lock held) as each burst of clicks came"
        )
    report(args.runs, rounds)
    print(f"server log: {len(problems)} error lines")
    for line in problems[:10]:
        print(f"  {line}")


if __name__ == "__main__":
    main()
