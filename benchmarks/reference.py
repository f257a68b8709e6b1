"""What this machine allows, measured without Signoff's engine, to read the targets against.

- `ledger_floor`: the statements the store runs for one read step (fence and seq check, the
  sealed result's checkpoint, the reply's checkpoint, the previous effect's outcome, the new
  effect's `started` row), with the store's own SQL and schema, from stdlib sqlite3, 100 runs
  per transaction with a savepoint per run, as the group-commit writer does. No engine, no
  model, no pydantic: the most any engine could reach with this ledger on this machine.
- `parse_floor`: turning the JSON of a transcript into messages, with the store's pydantic
  adapter and with stdlib `json` (plain dicts), as a floor for loading the latest state.
"""

from __future__ import annotations

import json
import os
import sqlite3
import statistics
import time
from collections.abc import Callable

from store import open_store
from store import queries
from store.digest import args_digest
from store.digest import packed
from store.records import MESSAGES

Q = queries.load("sqlite")
TEXT = "t" * 300
RESULT = json.dumps({"rows": "r" * 480})
ARGS = json.dumps({"key": "k", "payload": "p" * 80})
ARGS_DIGEST = packed(args_digest(json.loads(ARGS)))  # the ledger keeps each effect's args digest


def step_messages(step: int) -> tuple[str, str]:
    """The JSON of one step's tool result and of the next reply, as the store writes them."""
    result = [{"role": "tool", "content": RESULT, "tool_call_id": f"c{step}", "name": "lookup"}]
    call = {"id": f"c{step + 1}", "name": "lookup", "arguments": {"key": "k", "payload": "p" * 80}}
    reply = [{"role": "assistant", "content": f"step {step} {TEXT}", "tool_calls": [call]}]
    return json.dumps(result), json.dumps(reply)


def _checkpoint(run_id: str, seq: int, step: int, messages: str) -> dict[str, object]:
    return {
        "run_id": run_id,
        "seq": seq,
        "step": step,
        "snapshot": 0,
        "status": "running",
        "steps": step,
        "input_tokens": 0,
        "cached_input_tokens": 0,
        "output_tokens": 0,
        "cost": 0.0,
        "stop_reason": None,
        "error": None,
        "created_at": time.time(),
        "messages": messages,
    }


def _read_step(conn: sqlite3.Connection, run_id: str, step: int, result: str, reply: str) -> None:
    _, _, latest, _ = conn.execute(Q["run_head"], {"id": run_id}).fetchone()
    conn.execute(Q["insert_checkpoint"], _checkpoint(run_id, latest + 1, step, result))
    conn.execute(Q["insert_checkpoint"], _checkpoint(run_id, latest + 2, step + 1, reply))
    outcome = {
        "run_id": run_id,
        "call_id": f"c{step}",
        "status": "completed",
        "result": RESULT,
        "error": None,
        "finished_at": time.time(),
        "result_seq": latest + 1,  # the read's result is kept once, in that checkpoint
    }
    conn.execute(Q["finish_effect"], outcome).fetchone()
    effect = {
        "run_id": run_id,
        "call_id": f"c{step + 1}",
        "lineage_id": run_id,
        "step": step + 1,
        "tool": "lookup",
        "reversibility": "read",
        "compensator": None,
        "idempotency_key": f"lookup-{run_id}-{step + 1}",
        "idempotent": 0,
        "approval_id": None,
        "compensates": None,
        "started_at": time.time(),
        "args": ARGS,
        "sensitive": "[]",
        "args_digest": ARGS_DIGEST,
        "asked_digest": None,
    }
    conn.execute(Q["insert_effect"], effect)


async def ledger_floor(directory: str, runs: int = 100, steps: int = 40) -> float:
    """Steps per second for `runs` runs of `steps` read steps, group-committed, no engine."""
    path = os.path.join(directory, f"ledger-{time.monotonic_ns()}.db")
    store = await open_store(f"sqlite:///{path}")  # the store's own schema and migrations
    await store.close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA wal_autocheckpoint = 0")  # as the store's writer: none inside COMMIT
    now = time.time()
    for i in range(runs):
        run = {"id": f"r{i}", "agent": "a", "task": "t", "status": "running", "budget": "{}"}
        conn.execute(
            Q["insert_run"],
            run
            | {"requested_by": None, "lineage_id": f"r{i}", "parent_id": None, "fork_step": None}
            | {"dry_run": 0, "created_at": now, "updated_at": now, "model": None},
        )
        conn.execute(Q["insert_checkpoint"], _checkpoint(f"r{i}", 0, 0, "[]"))
        conn.execute(
            "INSERT INTO effects (run_id, call_id, lineage_id, step, tool, reversibility, "
            "idempotency_key, idempotent, status, started_at, args) "
            "VALUES (?, 'c0', ?, 0, 'lookup', 'read', ?, 0, 'started', ?, '{}')",
            (f"r{i}", f"r{i}", f"lookup-r{i}-0", now),
        )
    messages = [step_messages(step) for step in range(steps)]  # JSON is not the ledger's cost
    started = time.perf_counter()
    for step in range(steps):
        conn.execute("BEGIN IMMEDIATE")
        for i in range(runs):
            conn.execute("SAVEPOINT job")
            _read_step(conn, f"r{i}", step, *messages[step])
            conn.execute("RELEASE job")
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - started
    conn.close()
    return runs * steps / elapsed


def parse_floor(steps: int = 200, rounds: int = 30) -> tuple[float, float]:
    """Median ms to parse a `steps`-step transcript: (pydantic messages, stdlib json dicts)."""
    chunks = []
    for step in range(steps):
        result, reply = step_messages(step)
        chunks += [reply[1:-1], result[1:-1]]
    text = f"[{','.join(chunks)}]"
    return _median_ms(lambda: MESSAGES.validate_json(text), rounds), _median_ms(
        lambda: json.loads(text), rounds
    )


def _median_ms(work: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000
