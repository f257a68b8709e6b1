"""A cancel that asked to compensate, killed (SIGKILL, a real process) after the first
compensation and before the others, is finished by recovery: each remaining compensation runs
exactly once, newest first, and the run ends cancelled with what was compensated recorded."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from runtime import Runtime
from store import EffectStatus
from store import RunStatus
from store import Store

from .cancel_worker import CANCELLED_BY
from .cancel_worker import LEDGER as LEDGER  # the ledger_file fixture (conftest.py) sets it
from .cancel_worker import ROOMS
from .cancel_worker import ledger
from .cancel_worker import saga_agent
from .worker_process import run_until_killed

pytestmark = pytest.mark.slow

WORKER = Path(__file__).with_name("cancel_worker.py")
WORKER_ID = "cancel-worker"


async def test_cancel_killed_between_compensations_is_finished_by_recovery(
    file_store: Store, ledger_file: Path, tmp_path: Path
) -> None:
    run_id = "trip-1"
    code, output = await run_until_killed(WORKER, tmp_path / "signoff.db", run_id, WORKER_ID)

    assert code == -signal.SIGKILL, output
    assert "cancelling" in output, output
    booked = {e.args["room"]: e for e in await file_store.list_effects(run_id) if e.tool == "book"}
    assert set(booked) == set(ROOMS)
    assert all(e.status == EffectStatus.COMPLETED for e in booked.values())  # gold ended too
    assert ledger() == [*(("book", r) for r in ROOMS), ("unbook", ROOMS[-1])], output
    run = await file_store.get_run(run_id)
    assert run.status == RunStatus.CANCELLED

    rt = Runtime(file_store, [saga_agent()], worker_id=WORKER_ID)
    assert await rt.recover() == [run_id]

    unbooked = [room for tool, room in ledger() if tool == "unbook"]
    assert unbooked == list(reversed(ROOMS))  # each once, newest first
    effects = {e.call_id: e for e in await file_store.list_effects(run_id)}
    undos = [e for e in effects.values() if e.compensates]
    assert sorted(e.compensates or "" for e in undos) == sorted(e.call_id for e in booked.values())
    assert all(e.status == EffectStatus.COMPLETED for e in undos)
    assert all(effects[e.call_id].compensated_by for e in booked.values())
    run = await rt.get(run_id)
    assert (run.status, run.stop_reason) == (RunStatus.CANCELLED, "cancelled")
    events = await file_store.list_events(run_id=run_id)
    cancel = [e for e in events if e.action == "cancel"]
    assert [(e.actor, e.detail["compensate"]) for e in cancel] == [
        (CANCELLED_BY, [booked[ROOMS[-1]].call_id])
    ]
    ended = [e for e in events if e.action == "compensate"]
    assert len(ended) == 1, [e.action for e in events]
    assert sorted(ended[0].detail["compensated"]) == sorted(e.call_id for e in booked.values())
    assert ended[0].detail["paged"] == []

    history = await rt.history(run_id)
    assert await rt.recover() == []
    assert await rt.history(run_id) == history
    assert len(ledger()) == 2 * len(ROOMS)
