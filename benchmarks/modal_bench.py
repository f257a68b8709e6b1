"""Modal benchmark: how soon "Approve + similar…" opens its modal, and when its backtest is in.

    python benchmarks/modal_bench.py [--events 100000] [--window 200] [--rounds 9]

`signoff serve` (SQLite, the refund agent) and the fake Slack run as real processes, as
`bot_bench.py` starts them, with learned rules on (a rule-writer, a backtest of the tool's
latest `--window` requests) and an audit trail of `--events` events seeded into the database
(`backtest_bench.seed`: a quarter of them refund requests). Each round parks one refund on
its card, then sends, signed as Slack signs them, a `/runs help` command (the reference: the
same server answers it from memory) and a click on the card's "Approve + similar…". From
just before each is sent (wall clock), measured:

- the reference's ack, and the click's ack;
- the modal's `views.open` reaching Slack: the server's time to open it (a click's trigger
  lasts 3 s; the aim is 0.3 s);
- the backtest's `views.update` reaching Slack: when the modal is complete, which is when it
  opened before it answered first and computed after.

Medians over rounds, with the machine's load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path

from backtest_bench import seed
from bot_bench import Bench
from bot_bench import running
from bot_bench import signed
from support.slack_harness import BOB
from support.slack_harness import POLICY
from support.slack_harness import REQUESTER
from support.slack_harness import approval_id_of
from support.slack_harness import button
from support.slack_harness import slash

SETTLE = 60.0


def config(window: int) -> str:
    return POLICY + f'\n[learned_rules]\nwriters = ["{BOB}"]\nbacktest_size = {window}\n'


def post(bench: Bench, body: bytes) -> float:
    """Send a signed Slack request; the seconds to its ack."""
    data, headers = signed(body)
    request = urllib.request.Request(bench.server.base + "/slack/events", data=data)
    for name, value in headers.items():
        request.add_header(name, value)
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=10) as answer:
        answer.read()
    return time.perf_counter() - started


def arrival(bench: Bench, method: str, after: float) -> float:
    """Wall-clock time the fake Slack received the first `method` call made after `after`."""
    deadline = time.monotonic() + SETTLE
    while time.monotonic() < deadline:
        found = [c["at"] for c in bench.fake.calls() if c["method"] == method and c["at"] > after]
        if found:
            return float(min(found))
        time.sleep(0.01)
    raise SystemExit(f"no {method} within {SETTLE:.0f} s\n{bench.log_tail()}")


def one_round(bench: Bench, number: int) -> dict[str, float]:
    run_id = f"modal-{number}"
    start = {"agent": "refund-agent", "task": f"Refund order M{number}", "run_id": run_id}
    status, _ = bench.server.api("POST", "/v1/runs", start | {"requested_by": REQUESTER})
    if status != 201:
        raise SystemExit(f"starting {run_id}: {status}")
    bench.wait_until(lambda: bench.count_status([run_id], "waiting_approval") == 1, "parked")
    bench.wait_until(lambda: bench.unsent() == 0, "its card posted")
    [(approval_id,)] = bench.query("SELECT id FROM approvals WHERE run_id = ?", (run_id,))
    [card] = [c for c in bench.fake.cards() if approval_id_of(c) == approval_id]
    time.sleep(0.2)
    reference = post(bench, slash("help", user=BOB))
    sent = time.time()
    ack = post(bench, button("approve_similar", approval_id, user=BOB, ts=str(card["ts"])))
    opened = arrival(bench, "views.open", sent) - sent
    complete = arrival(bench, "views.update", sent) - sent
    return {"reference": reference, "ack": ack, "open": opened, "complete": complete}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--window", type=int, default=200, help="requests a backtest replays")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as directory,
        running(Path(directory), config(args.window)) as bench,
    ):
        requests = seed(bench.db, args.events, restocking_fee_cents=0)
        loads = [os.getloadavg()[0]]
        rounds = []
        for number in range(args.rounds + 1):
            measured = one_round(bench, number)
            if number:  # the first pays for imports and caches
                rounds.append(measured)
            loads.append(os.getloadavg()[0])
        problems = bench.log_problems()
    print(
        f'"Approve + similar…" on {args.events:,} audit events ({requests:,} refund requests), '
        f"a backtest of the latest {args.window}; medians of {args.rounds} rounds, ms "
        f"(load average {min(loads):.1f}-{max(loads):.1f}):"
    )
    labels = {
        "reference": "/runs help ack (reference)",
        "ack": "click ack",
        "open": "click -> views.open (modal open)",
        "complete": "click -> views.update (backtest in)",
    }
    for key, label in labels.items():
        values = [r[key] * 1000 for r in rounds]
        by_round = " ".join(f"{v:.0f}" for v in values)
        print(f"  {label:<37} {statistics.median(values):8.1f}   {by_round}")
    print(f"server log: {len(problems)} error lines")
    for line in problems[:10]:
        print(f"  {json.dumps(line)}")


if __name__ == "__main__":
    main()
