"""A process that builds a Runtime collects its young objects at the driving pace, unless
it chose its own thresholds first (a real interpreter each: thresholds are per process)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from runtime.collector import CPYTHON_DEFAULT
from runtime.collector import DRIVING

ROOT = Path(__file__).resolve().parents[2]
BUILD = """
import gc, json
{before}
from runtime import Runtime
from store import open_store
import asyncio

async def main():
    store = await open_store("sqlite://:memory:")
    Runtime(store, [])
    await store.close()

asyncio.run(main())
print(json.dumps(gc.get_threshold()))
"""


def _thresholds_after_building(before: str = "") -> tuple[int, ...]:
    code = BUILD.format(before=before)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return tuple(json.loads(done.stdout.splitlines()[-1]))


def test_a_runtime_sets_the_driving_pace_over_cpythons_default() -> None:
    fresh = subprocess.run(
        [sys.executable, "-c", "import gc; print(list(gc.get_threshold()))"],
        capture_output=True,
        text=True,
        check=True,
    )
    default = tuple(json.loads(fresh.stdout))
    # an interpreter whose default is not the one measured against is left as it is
    expected = DRIVING if default == CPYTHON_DEFAULT else default
    assert DRIVING != CPYTHON_DEFAULT
    assert _thresholds_after_building() == expected


def test_thresholds_a_process_chose_are_kept() -> None:
    assert _thresholds_after_building("gc.set_threshold(2000, 5, 5)") == (2000, 5, 5)
