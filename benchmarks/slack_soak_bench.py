"""Slack delivery benchmark: Web API calls per card draining a backlog, and a soak under faults.

    python benchmarks/slack_soak_bench.py [--backlog 3000] [--phases 10] [--per-phase 6] [--seed 28]
        [--late 8 14]

`signoff serve` runs as a real process (SQLite file) against the local fake Slack in another
process, as in the end-to-end tests.

1. Drain: `--backlog` approvals are requested while the server runs API-only (no Slack
   sender), so their cards wait as outbox rows; then `signoff serve` starts with Slack and
   drains them, Slack answering normally. Printed: cards delivered, Web API calls of each
   method, calls per delivered card, seconds to drain.
2. Soak (claims of 3 s, as the tests): `--phases` times, the fake is told to hang two posts
   8-14 s (past the settle time of 2.25 s and a restart: they land after the poster gave up
   and after the lookup), lose two answers (the post
   lands, the answer is a 500), answer 500 and 429 a few times; `--per-phase` approvals are
   requested, and the server is SIGKILLed at a random point and restarted. Printed: cards,
   duplicates that became visible and were removed (`chat.delete`), duplicates left visible
   once converged (must be 0), seconds from the last restart to convergence (one visible
   card per approval, the one on the record), calls per card.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp

REPO = Path(__file__).resolve().parents[1]
# the end-to-end harness lives in tests/, which is not installed
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from support.helpers import TOKEN  # noqa: E402
from support.slack_harness import APPROVALS  # noqa: E402
from support.slack_harness import REQUESTER  # noqa: E402
from support.slack_harness import FakeSlackProcess  # noqa: E402
from support.slack_harness import SlackServer  # noqa: E402
from support.slack_harness import start_server  # noqa: E402
from surfaces.slack.test_slack_soak import converged  # noqa: E402
from surfaces.slack.test_slack_soak import faults  # noqa: E402
from surfaces.slack.test_slack_soak import recorded  # noqa: E402
from surfaces.slack.test_slack_soak import visible  # noqa: E402

OPEN = {"SIGNOFF_API_RATE_PER_MINUTE": "100000000"}
QUICK = OPEN | {"SIGNOFF_OUTBOX_CLAIM_SECONDS": "3"}
LATE = (8.0, 14.0)
"""Seconds after which a hung post lands: past the settle time (2.25 s) and a restart."""
TIMEOUT = 600.0


def wait(check: Callable[[], bool], server: SlackServer, what: str) -> float:
    started = time.monotonic()
    deadline = started + TIMEOUT
    while not check():
        if server.process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(
                f"{what}: not within {TIMEOUT:.0f} s\n{server.log.read_text()[-3000:]}"
            )
        time.sleep(0.1)
    return time.monotonic() - started


async def request_all(base: str, ids: list[str], at_once: int = 16) -> None:
    slots = asyncio.Semaphore(at_once)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with aiohttp.ClientSession(headers=headers) as session:

        async def one(approval_id: str) -> None:
            body = {
                "tool": "issue_refund",
                "args": {"order_id": approval_id, "amount_cents": 1},
                "approval_id": approval_id,
                "requested_by": REQUESTER,
            }
            async with slots, session.post(f"{base}/v1/approvals", json=body) as response:
                if response.status not in (200, 201):
                    raise SystemExit(f"{approval_id}: {response.status} {await response.text()}")

        await asyncio.gather(*(one(i) for i in ids))


def posted(db: Path) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        return int(
            conn.execute("SELECT count(*) FROM approvals WHERE message_ts IS NOT NULL").fetchone()[
                0
            ]
        )


def calls_of(fake: FakeSlackProcess) -> Counter[str]:
    return Counter(str(c["method"]) for c in fake.calls())


def drain(directory: Path, world: Path, backlog: int) -> dict[str, Any]:
    fake = FakeSlackProcess(directory)
    try:
        api_only = start_server(
            directory, world, fake.base_url, extra=OPEN | {"SIGNOFF_API_ONLY": "1"}
        )
        ids = [f"drain-{i}" for i in range(backlog)]
        asyncio.run(request_all(api_only.base, ids))
        api_only.stop()
        started = time.monotonic()
        server = start_server(directory, world, fake.base_url, extra=OPEN)
        try:
            db = directory / "signoff.db"
            wait(lambda: posted(db) >= backlog, server, "the backlog drained")
            seconds = time.monotonic() - started
            time.sleep(2.0)  # nothing more goes out
        finally:
            server.stop()
        cards = len(fake.cards(APPROVALS))
        calls = calls_of(fake)
        return {"cards": cards, "calls": calls, "seconds": seconds}
    finally:
        fake.stop()


def soak(
    directory: Path,
    world: Path,
    phases: int,
    per_phase: int,
    seed: int,
    late: tuple[float, float] = LATE,
) -> dict[str, Any]:
    rng = random.Random(seed)
    fake = FakeSlackProcess(directory)
    db = directory / "signoff.db"
    ids: list[str] = []
    try:
        server = start_server(directory, world, fake.base_url, extra=QUICK)
        kills = 0
        for phase in range(phases):
            faults(fake, rng, late=late)
            last_faults = time.monotonic()
            batch = [f"soak-{phase}-{i}" for i in range(per_phase)]
            asyncio.run(request_all(server.base, batch))
            ids += batch
            time.sleep(rng.uniform(0.2, 2.5))
            server.kill()
            kills += 1
            server = start_server(directory, world, fake.base_url, extra=QUICK)
        restarted = time.monotonic()
        try:
            first = wait(lambda: converged(fake, db, ids), server, "one visible card each")
            # The last hung posts land up to late[1] s after they were sent: converged only
            # once they have, and the reconciler has removed them.
            time.sleep(max(0.0, last_faults + late[1] + 1 - time.monotonic()))
            wait(lambda: converged(fake, db, ids), server, "one visible card each, again")
            seconds = time.monotonic() - restarted
            time.sleep(1.0)
            left = sum(len(ts) - 1 for ts in visible(fake).values())
            unrecorded = sum(1 for i in ids if recorded(db).get(i) is None)
        finally:
            server.kill()
        deleted = [m for m in fake.deleted() if m["thread_ts"] is None]
        return {
            "cards": len(ids),
            "kills": kills,
            "removed": len(deleted),
            "left": left,
            "unrecorded": unrecorded,
            "seconds": seconds,
            "first": first,
            "calls": calls_of(fake),
        }
    finally:
        fake.stop()


def report_calls(calls: Counter[str], cards: int) -> str:
    listed = ", ".join(f"{method} {n}" for method, n in calls.most_common())
    return f"{sum(calls.values()) / cards:.3f} calls per card ({listed})"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--backlog", type=int, default=3000, help="0: no drain")
    parser.add_argument("--phases", type=int, default=10)
    parser.add_argument("--per-phase", type=int, default=6)
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument(
        "--late",
        type=float,
        nargs=2,
        default=LATE,
        metavar=("MIN", "MAX"),
        help="seconds after which a hung post lands (the tests wait less)",
    )
    parser.add_argument("--dir", default=None, help="where to put the database files")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(dir=args.dir) as first,
        tempfile.TemporaryDirectory(dir=args.dir) as second,
    ):
        if args.backlog:
            drained = drain(Path(first), Path(first) / "world.db", args.backlog)
            print(
                f"drain: {drained['cards']} of {args.backlog} cards in "
                f"{drained['seconds']:.1f} s, " + report_calls(drained["calls"], drained["cards"])
            )
        soaked = soak(
            Path(second),
            Path(second) / "world.db",
            args.phases,
            args.per_phase,
            args.seed,
            tuple(args.late),
        )
    print(
        f"soak (seed {args.seed}): {soaked['cards']} cards, {soaked['kills']} SIGKILLs; "
        f"duplicates visible then removed: {soaked['removed']}; left visible: "
        f"{soaked['left']}; cards not on the record: {soaked['unrecorded']}; one card each "
        f"{soaked['first']:.1f} s after the last restart, and for good (the last late post "
        f"landed and removed) {soaked['seconds']:.1f} s after it"
    )
    print("soak: " + report_calls(soaked["calls"], soaked["cards"]))
    if soaked["left"] or soaked["unrecorded"]:
        raise SystemExit("duplicates or unrecorded cards remain")


if __name__ == "__main__":
    main()
