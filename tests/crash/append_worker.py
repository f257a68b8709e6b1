"""Append checkpoints to a SQLite store until killed (a subprocess of test_store_crash.py).

Usage: python append_worker.py DB_PATH RUN_COUNT

Each run appends, in one batch per seq: checkpoint `seq` holding `expected_message(run, seq)`,
effect `call-<seq>` started, and effect `call-<seq - 1>` completed. Several runs append at once,
so their commits share transactions (group commit). "ready" is printed once the store is open;
then "<run_id> <seq>" is printed and flushed for every commit, only after it returned.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC
from datetime import datetime

from store import Batch
from store import Checkpoint
from store import Effect
from store import EffectOutcome
from store import EffectStatus
from store import Message
from store import Reversibility
from store import Run
from store import RunStatus
from store import Store
from store import errors
from store import open_store


def expected_message(run_id: str, seq: int) -> Message:
    """The message of checkpoint `seq`: derived from its position, padded to a varying size."""
    return Message(role="assistant", content=f"{run_id}#{seq} " + "é" * (seq * 37 % 700))


def call_id(seq: int) -> str:
    return f"call-{seq}"


async def ensure_run(store: Store, run_id: str) -> int:
    """Create the run if an earlier worker did not; return its latest seq."""
    try:
        return (await store.load_state(run_id)).seq
    except errors.NotFound:
        now = datetime.now(UTC)
        run = Run(id=run_id, agent="crash", task="append", lineage_id=run_id, created_at=now)
        snapshot = Checkpoint(
            run_id=run_id, seq=0, step=0, snapshot=True, status=RunStatus.RUNNING, created_at=now
        )
        await store.create_run(run, snapshot)
        return 0


def batch(run_id: str, seq: int) -> Batch:
    now = datetime.now(UTC)
    checkpoint = Checkpoint(
        run_id=run_id,
        seq=seq,
        step=seq,
        status=RunStatus.RUNNING,
        messages=(expected_message(run_id, seq),),
        created_at=now,
    )
    started = Effect(
        run_id=run_id,
        call_id=call_id(seq),
        lineage_id=run_id,
        step=seq,
        tool="append",
        args={"seq": seq},
        idempotency_key=f"{run_id}-{seq}",
        reversibility=Reversibility.IRREVERSIBLE,
        started_at=now,
    )
    finished = [
        EffectOutcome(
            run_id=run_id,
            call_id=call_id(seq - 1),
            status=EffectStatus.COMPLETED,
            result={"seq": seq - 1},
            finished_at=now,
        )
    ]
    return Batch(
        run_id=run_id, checkpoints=[checkpoint], start=[started], finish=finished if seq > 1 else []
    )


async def append_forever(store: Store, run_id: str, latest: int) -> None:
    seq = latest
    while True:
        seq += 1
        await store.commit(batch(run_id, seq))
        print(f"{run_id} {seq}", flush=True)


async def main(path: str, run_count: int) -> None:
    store = await open_store(f"sqlite:///{path}")
    run_ids = [f"run-{i}" for i in range(run_count)]
    latest = [await ensure_run(store, run_id) for run_id in run_ids]
    print("ready", flush=True)
    await asyncio.gather(*map(append_forever, [store] * run_count, run_ids, latest))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
