"""What the crash workers that book rooms and give them back share with their tests: the
outside world (a text file an environment variable names, one line per tool call), and the
kill right after the first compensation's result is committed.

A worker runs as a script with `tests` on PYTHONPATH (`worker_process.run_until_killed`), so
it imports this module as `crash.room_ledger`, as the tests do."""

from __future__ import annotations

import os
import signal

from store import Batch
from store import Committed
from store import Store


def write_ledger(variable: str, *fields: str) -> None:
    """Append one call to the ledger the environment variable `variable` names."""
    with open(os.environ[variable], "a") as ledger:
        ledger.write(" ".join(fields) + "\n")


def read_ledger(variable: str) -> list[tuple[str, ...]]:
    """The fields of every call the outside world saw, oldest first."""
    with open(os.environ[variable]) as lines:
        return [tuple(line.split()) for line in lines]


def die_after_first_undo(store: Store) -> None:
    """SIGKILL this process once a compensation's outcome is durable."""
    commit = store.commit

    async def commit_then_die(batch: Batch) -> Committed:
        committed = await commit(batch)
        if any(outcome.call_id.startswith("undo:") for outcome in batch.finish):
            os.kill(os.getpid(), signal.SIGKILL)
        return committed

    store.commit = commit_then_die  # type: ignore[method-assign]
