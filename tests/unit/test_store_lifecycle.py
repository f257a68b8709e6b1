"""Opening and closing a store: `await open_store(url)` and `async with open_store(url)`, and
a process whose code never closes its store still exits."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from support.helpers import run_text

from store import Approval
from store import errors
from store import open_store

ROOT = Path(__file__).resolve().parents[2]
EXITS_WITHIN = 10.0  # seconds; a hung process is killed at twice this


def run_script(tmp_path: Path, body: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run `body` inside `async def main()` of a fresh interpreter; return it and its duration."""
    script = tmp_path / "script.py"
    script.write_text(
        "import asyncio\nfrom store import Approval, open_store\n\n"
        "async def main() -> None:\n"
        + textwrap.indent(textwrap.dedent(body), "    ")
        + "\nasyncio.run(main())\n"
    )
    started = time.monotonic()
    try:
        done = run_text(
            [sys.executable, str(script)],
            cwd=tmp_path,
            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
            timeout=2 * EXITS_WITHIN,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the process did not exit within {2 * EXITS_WITHIN:g}s: a thread held it")
    return done, time.monotonic() - started


OPEN_AND_WRITE = """
store = await open_store("sqlite:///s.db")
await store.create_approval(Approval(id="a1", tool="wire", args={}))
await store.get_approval("a1")
"""


def test_a_script_that_raises_after_open_store_exits(tmp_path: Path) -> None:
    done, took = run_script(tmp_path, OPEN_AND_WRITE + 'raise RuntimeError("boom")\n')
    assert done.returncode == 1
    assert "RuntimeError: boom" in done.stderr
    assert took < EXITS_WITHIN


def test_a_script_that_forgets_close_exits(tmp_path: Path) -> None:
    done, took = run_script(tmp_path, OPEN_AND_WRITE + 'print("finished")\n')
    assert (done.returncode, done.stdout.strip()) == (0, "finished"), done.stderr
    assert took < EXITS_WITHIN
    done, _ = run_script(  # what was written before the exit is there
        tmp_path,
        """
        async with open_store("sqlite:///s.db") as store:
            print((await store.get_approval("a1")).tool)
        """,
    )
    assert (done.returncode, done.stdout.strip()) == (0, "wire"), done.stderr


def test_async_with_closes_the_store_when_the_block_raises(tmp_path: Path) -> None:
    done, took = run_script(
        tmp_path,
        """
        async with open_store("sqlite:///s.db") as store:
            await store.create_approval(Approval(id="a1", tool="wire", args={}))
            raise RuntimeError("boom")
        """,
    )
    assert done.returncode == 1
    assert "RuntimeError: boom" in done.stderr
    assert took < EXITS_WITHIN


async def test_async_with_yields_an_open_store_and_closes_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    async with open_store(url) as store:
        await store.create_approval(Approval(id="a1", tool="wire", args={}))
        assert (await store.get_approval("a1")).tool == "wire"
    with pytest.raises(errors.DatabaseError, match="closed"):
        await store.create_approval(Approval(id="a2", tool="wire", args={}))


async def test_await_open_store_still_returns_the_store(tmp_path: Path) -> None:
    store = await open_store(f"sqlite:///{tmp_path / 's.db'}")
    try:
        await store.create_approval(Approval(id="a1", tool="wire", args={}))
        assert (await store.get_approval("a1")).id == "a1"
    finally:
        await store.close()


async def test_a_bad_url_is_refused_either_way() -> None:
    with pytest.raises(errors.UnsupportedURL):
        await open_store("mysql://x")
    with pytest.raises(errors.UnsupportedURL):
        async with open_store("mysql://x"):
            pass


def test_a_backends_own_options_ride_in_its_url_and_the_rest_of_the_query_stays() -> None:
    from store import POSTGRES_URL_OPTIONS
    from store import SQLITE_URL_OPTIONS
    from store import sqlite_path
    from store import url_options

    assert url_options(
        "sqlite:///s.db?synchronous=NORMAL&busy_timeout_ms=50", SQLITE_URL_OPTIONS
    ) == (
        "sqlite:///s.db",
        {"synchronous": "NORMAL", "busy_timeout_ms": 50},
    )
    assert sqlite_path("sqlite:///s.db?synchronous=NORMAL") == "s.db"
    assert url_options("postgresql://h/db?pool_size=3&search_path=x", POSTGRES_URL_OPTIONS) == (
        "postgresql://h/db?search_path=x",
        {"pool_size": 3},
    )
    with pytest.raises(errors.UnsupportedURL, match="pool_size='many'"):
        url_options("postgresql://h/db?pool_size=many", POSTGRES_URL_OPTIONS)
    with pytest.raises(errors.UnsupportedURL, match=r"unknown SQLite option.*journal"):
        sqlite_path("sqlite:///s.db?journal=off")


async def test_the_synchronous_mode_in_a_sqlite_url_is_the_one_used(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}?synchronous=NORMAL"
    async with open_store(url) as store:
        mode = await store._writer.run(  # type: ignore[attr-defined]
            lambda conn: conn.execute("PRAGMA synchronous").fetchone()[0]
        )
    assert mode == 1  # NORMAL (FULL is 2)
    with pytest.raises(ValueError, match="synchronous must be"):
        await open_store(f"sqlite:///{tmp_path / 's.db'}?synchronous=SOMETIMES")
