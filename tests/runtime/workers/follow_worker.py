"""A second worker for the lease-keeper tests: it takes over any run whose lease lapses
(`Runtime.follow_lapses`), as `signoff serve` does, until the file `stop` appears in the
directory SIGNOFF_TEST_MARKER names; then it prints how many runs it took over, as JSON.

    python follow_worker.py <database-url> <lease-ttl>

It prints `ready` once it follows. Run it with `tests/runtime` on PYTHONPATH.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from blocking_agents import exporter

from runtime import Runtime
from runtime.runs.telemetry import NullTelemetry
from store import open_store


class Takeovers(NullTelemetry):
    count = 0

    def leases_taken_over(self, count: int) -> None:
        Takeovers.count += count


async def main(url: str, ttl: float) -> None:
    stop = Path(os.environ["SIGNOFF_TEST_MARKER"]) / "stop"
    async with open_store(url) as store:
        rt = Runtime(store, [exporter], worker_id="worker-b", lease_ttl=ttl, telemetry=Takeovers())
        following = asyncio.create_task(rt.follow_lapses(poll=0.1))
        print("ready", flush=True)
        while not stop.exists():  # noqa: ASYNC110 (made by another process)
            await asyncio.sleep(0.05)
        following.cancel()
        recovered = await rt.recover()  # one last look, after the run ended or lapsed
    print(json.dumps({"taken_over": Takeovers.count, "recovered": recovered}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], float(sys.argv[2])))
