"""Crash safety: SIGKILL a process that appends checkpoints; nothing acknowledged is lost.

The worker (`append_worker.py`, a real subprocess on a real file) prints each seq only after
`commit` returned. After every kill the file must pass `PRAGMA integrity_check`, and every
acknowledged append must be there, whole: its checkpoint, its started effect and the outcome
of the effect before it, since one batch is one transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import sqlite3
import sys
from collections import defaultdict
from pathlib import Path

import pytest

import store as store_package
from store import EffectStatus
from store import Store
from store import open_store

from .append_worker import call_id
from .append_worker import expected_message

WORKER = Path(__file__).with_name("append_worker.py")
TRIALS = 8
RUNS = 3
READY_TIMEOUT = 30.0


async def run_until_killed(db: Path, delay: float) -> list[str]:
    """Start a worker, let it append for `delay` seconds after it is ready, SIGKILL it."""
    env = {**os.environ, "PYTHONPATH": str(Path(store_package.__file__).parents[1])}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(WORKER),
        str(db),
        str(RUNS),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    ready = b""
    try:
        ready = await asyncio.wait_for(proc.stdout.readline(), READY_TIMEOUT)
        if ready == b"ready\n":
            await asyncio.sleep(delay)
    except TimeoutError:
        pass
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGKILL)
        output, errors = await proc.communicate()
    assert ready == b"ready\n", f"the worker did not start: {errors.decode()}"
    assert proc.returncode == -signal.SIGKILL, errors.decode()  # it was appending, not failing
    return output.decode().splitlines()


def acknowledged(lines: list[str]) -> dict[str, list[int]]:
    """Seqs per run from the worker's output; a line cut by the kill is not an ack."""
    acks: dict[str, list[int]] = defaultdict(list)
    for line in lines:
        run_id, _, seq = line.partition(" ")
        if seq.isdigit():
            acks[run_id].append(int(seq))
    return acks


def assert_file_is_sound(db: Path) -> None:
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        conn.close()


async def assert_appends_are_whole(store: Store, run_id: str, acked: list[int]) -> None:
    history = await store.history(run_id)
    latest = history[-1].seq
    assert [cp.seq for cp in history] == list(range(latest + 1))
    assert max(acked, default=0) <= latest, f"{run_id}: acknowledged {max(acked)}, kept {latest}"
    assert [cp.messages for cp in history[1:]] == [
        (expected_message(run_id, seq),) for seq in range(1, latest + 1)
    ]
    effects = {e.call_id: e.status for e in await store.list_effects(run_id)}
    expected = {call_id(seq): EffectStatus.COMPLETED for seq in range(1, latest)}
    if latest:
        expected[call_id(latest)] = EffectStatus.STARTED
    assert effects == expected
    state = await store.load_state(run_id)
    assert (state.seq, len(state.messages)) == (latest, latest)


@pytest.mark.slow
async def test_every_acknowledged_append_survives_sigkill(tmp_path: Path) -> None:
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    db = tmp_path / "crash.db"
    acked: dict[str, list[int]] = defaultdict(list)

    for trial in range(TRIALS):
        lines = await run_until_killed(db, delay=rng.uniform(0.05, 0.5))
        for run_id, seqs in acknowledged(lines).items():
            acked[run_id] += seqs

        assert_file_is_sound(db)
        store = await open_store(f"sqlite:///{db}")
        try:
            for run_id in (f"run-{i}" for i in range(RUNS)):
                await assert_appends_are_whole(store, run_id, acked[run_id])
        finally:
            await store.close()
        print(f"trial {trial} (seed {seed}): acknowledged {sum(map(len, acked.values()))}")

    assert sum(map(len, acked.values())) >= TRIALS, f"too few appends to prove anything ({seed})"
