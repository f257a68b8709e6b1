"""A rollback killed (SIGKILL, a real process) between two undos is finished by recovery:
every effect is compensated once, and the run ends restored to the step it was rolled back to.
"""

from __future__ import annotations

import signal
from collections import Counter
from pathlib import Path

from runtime import Runtime
from store import EffectStatus
from store import Store

from .undo_worker import LEDGER as LEDGER  # the ledger_file fixture (conftest.py) sets it
from .undo_worker import ROOMS
from .undo_worker import booking_agent
from .undo_worker import ledger
from .worker_process import run_until_killed

WORKER = Path(__file__).with_name("undo_worker.py")
WORKER_ID = "undo-worker"


async def test_rollback_killed_between_two_undos_is_finished_by_recovery(
    file_store: Store, ledger_file: Path, tmp_path: Path
) -> None:
    rt = Runtime(file_store, [booking_agent()], worker_id=WORKER_ID)
    run_id = await rt.start("booker", "Book the rooms")
    booked = [e for e in await file_store.list_effects(run_id) if e.tool == "book"]
    assert len(booked) == len(ROOMS)

    code, output = await run_until_killed(WORKER, tmp_path / "signoff.db", run_id, WORKER_ID)

    assert code == -signal.SIGKILL, output
    undos = [e for e in await file_store.list_effects(run_id) if e.compensates]
    assert [e.status for e in undos] == [EffectStatus.COMPLETED]  # between undos, not inside
    assert (await rt.get(run_id)).stop_reason == "answered"

    assert await rt.recover() == [run_id]

    assert Counter(room for tool, room, _ in ledger() if tool == "unbook") == Counter(ROOMS)
    undos = [e for e in await file_store.list_effects(run_id) if e.compensates]
    assert sorted(e.compensates or "" for e in undos) == sorted(e.call_id for e in booked)
    assert all(e.status == EffectStatus.COMPLETED for e in undos)
    run = await rt.get(run_id)
    assert (run.step, run.stop_reason) == (0, "rolled_back")
    assert (await file_store.load_state(run_id)).messages == (await rt.state_at(run_id, 0)).messages
    actions = [e.action for e in await file_store.list_events(run_id=run_id)]
    assert actions.count("undo_started") == 1  # recovery finishes the intent, not a new one
    history = await rt.history(run_id)
    assert await rt.recover() == []
    assert await rt.history(run_id) == history
