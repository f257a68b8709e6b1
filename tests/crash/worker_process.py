"""Running one crash worker (a script beside the tests) until it kills itself."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


async def run_until_killed(worker: Path, db: Path, run_id: str, worker_id: str) -> tuple[int, str]:
    """The worker's exit code and its output, after it drove `run_id` on the SQLite file `db`."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(worker),
        f"sqlite:///{db}",
        run_id,
        worker_id,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests")])),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode is not None
    return proc.returncode, out.decode() + err.decode()
