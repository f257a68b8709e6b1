"""The MCP proxy's ledger of forwarded calls, in a SQLite file, so a call approved once is
forwarded once, even across a restart of the proxy.

A call's key is fixed by what it is: the proxy's session name, the tool and its canonical
arguments (as the runtime keys its own tools). Before forwarding, the key is written as
`started`; once the downstream server answers, the answer is written beside it (`done`).
A call whose key is `done` gets the recorded answer and is not forwarded again; one left
`started` by a crash may have run: it is in doubt, and it is not forwarded again either (a
person checks) - at most once, and exactly once when the crash came after the forward.
Writes are synced (`synchronous=FULL`) before the proxy acts on them.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from typing import Literal

State = Literal["started", "done"]
SCHEMA = """
CREATE TABLE IF NOT EXISTS forwards (
    key         TEXT PRIMARY KEY,
    tool        TEXT NOT NULL,
    args        TEXT NOT NULL,
    approval_id TEXT,
    state       TEXT NOT NULL,
    result      TEXT,
    at          REAL NOT NULL
)
"""


def call_key(session: str, tool: str, args: dict[str, Any]) -> str:
    canonical = json.dumps([session, tool, args], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Entry:
    key: str
    state: State
    result: dict[str, Any] | None


class Ledger:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.execute(SCHEMA)

    def close(self) -> None:
        self._db.close()

    def find(self, key: str) -> Entry | None:
        row = self._db.execute(
            "SELECT state, result FROM forwards WHERE key = ?", (key,)
        ).fetchone()
        if row is None:
            return None
        return Entry(key, row[0], json.loads(row[1]) if row[1] else None)

    def start(self, key: str, tool: str, args: dict[str, Any], approval_id: str | None) -> bool:
        """Claim the key before forwarding; False if it was claimed before (forward nothing)."""
        cursor = self._db.execute(
            "INSERT OR IGNORE INTO forwards (key, tool, args, approval_id, state, at) "
            "VALUES (?, ?, ?, ?, 'started', ?)",
            (key, tool, json.dumps(args, sort_keys=True), approval_id, time.time()),
        )
        return cursor.rowcount == 1

    def finish(self, key: str, result: dict[str, Any]) -> None:
        self._db.execute(
            "UPDATE forwards SET state = 'done', result = ?, at = ? WHERE key = ?",
            (json.dumps(result), time.time(), key),
        )
