"""Shared fixtures: a `store` per backend, a runtime factory, a clock you can move, a world.

PostgreSQL runs where asyncpg is installed: one fresh schema per test session in the database
`SIGNOFF_TEST_POSTGRES_URL` names (default: the local server's `test`), emptied before each
test and dropped at the end. A server that cannot be reached fails those tests; only a
missing driver skips them.
"""

from __future__ import annotations

import asyncio
import compileall
import inspect
import os
import secrets
import sys
from collections.abc import AsyncIterator
from collections.abc import Callable
from collections.abc import Coroutine
from collections.abc import Iterable
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from _pytest import nodes
from support.pg_support import HAVE_ASYNCPG
from support.pg_support import POSTGRES_URL
from support.pg_support import postgres
from support.pg_support import with_search_path
from support.serve_workers import Worker
from support.slack_harness import FakeSlackProcess

from runtime import Agent
from runtime import Runtime
from store import Store
from store import open_store

STORE_BACKENDS = [
    "sqlite-file",
    "sqlite-memory",
    pytest.param(
        "postgres",
        marks=pytest.mark.skipif(not HAVE_ASYNCPG, reason="asyncpg is not installed"),
    ),
]
SIGNOFF_TABLES = (
    "runs, checkpoints, effects, approvals, approval_votes, facts, pages, audit_events, outbox,"
    " learned_rules, workers, audit_anchors, audit_sinks, spend_counters, spend_holds,"
    " envelopes, spend_limits, effect_reuses, email_links, away, inbound_seen,"
    " approval_deciders, passkeys, passkey_challenges"
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The `slow` tests (fleets of processes killed and frozen on timers) share one xdist
    group: one worker runs them one after another, beside the other worker's light tests.
    Being the largest group, it is handed out first (xdist's loadscope reorder), so its long
    tests start at once instead of trailing at the end."""
    for item in items:
        if item.get_closest_marker("slow") is not None:
            item.add_marker(pytest.mark.xdist_group("slow"))


class GroupSuffix:
    """xdist tells its controller a test's group by appending `@group` to the test's id, in
    the worker's `pytest_collection_modifyitems`, by setting `item._nodeid`; pytest 9.2 reads
    the id from `item._id` instead, so the suffix is lost and `--dist loadgroup` groups
    nothing, silently (pytest-dev/pytest-xdist#1386): the `slow` tests ran two at a time.
    This puts the suffix where pytest reads it, after xdist's hook, wherever it is missing."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        if not getattr(config.option, "loadgroup", False):  # set in xdist workers only
            return
        for item in items:
            groups = sorted({str(mark.args[0]) for mark in item.iter_markers("xdist_group")})
            suffix = "@" + "_".join(groups)
            if groups and not item.nodeid.endswith(suffix):
                item._id = nodes.NodeId.parse(item.nodeid + suffix)  # type: ignore[attr-defined]


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(nodes.Node, "id"):  # pytest 9.2 and later: structured ids
        config.pluginmanager.register(GroupSuffix(), "signoff-xdist-group-suffix")
    if not hasattr(config, "workerinput"):  # once, in the process that starts the workers
        compile_the_project()


PROJECT = Path(__file__).resolve().parents[1]
COMPILED = ("bot", "runtime", "store", "signoff", "examples", "tests")


def compile_the_project() -> None:
    """Where PYTHONDONTWRITEBYTECODE is set (the shells on the shared machine have it), no
    process caches the project's bytecode, so every `signoff serve`, CLI command, fake Slack
    and worker the tests start compiled its ~220 modules again: 0.4 s of CPU per `signoff
    serve`. Compiled here once (0.1 s when nothing changed), they load what Python would have
    cached anyway; a file edited later is compiled again in memory (a `.pyc` names its
    source's mtime)."""
    if not sys.dont_write_bytecode:
        return
    for folder in COMPILED:
        compileall.compile_dir(PROJECT / folder, quiet=1)


def store_url(backend: str, tmp_path: Path) -> str:
    if backend == "sqlite-file":
        return f"sqlite:///{tmp_path / 'signoff.db'}"
    if backend == "sqlite-memory":
        return "sqlite://:memory:"
    raise ValueError(backend)


@pytest.fixture(scope="session")
def postgres_schema() -> Iterator[str]:
    """A URL naming a fresh schema for this session, migrated by its first store."""
    name = f"signoff_test_{os.getpid()}_{secrets.token_hex(3)}"
    in_own_loop(postgres(f"CREATE SCHEMA {name}"))
    try:
        yield with_search_path(POSTGRES_URL, name)
    finally:
        in_own_loop(postgres(f"DROP SCHEMA {name} CASCADE"))


def in_own_loop(work: Coroutine[Any, Any, None]) -> None:
    """Run a coroutine to its end from a fixture that may be set up inside a running loop."""
    with ThreadPoolExecutor(1) as thread:
        thread.submit(asyncio.run, work).result()


async def empty_postgres_store(request: pytest.FixtureRequest) -> str:
    """The session's schema, migrated and emptied: a URL for one test's store."""
    url: str = request.getfixturevalue("postgres_schema")
    await (await open_store(url)).close()
    await postgres(f"TRUNCATE {SIGNOFF_TABLES} RESTART IDENTITY", url)
    return url


@pytest.fixture(params=STORE_BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """A fresh, migrated store on each backend."""
    if request.param == "postgres":
        url = await empty_postgres_store(request)
    else:
        url = store_url(request.param, tmp_path)
    opened = await open_store(url, clock=moved_clock(request))
    yield opened
    await opened.close()


@pytest.fixture
async def file_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """A store on a real SQLite file (for tests that need a second connection or process)."""
    opened = await open_store(f"sqlite:///{tmp_path / 'signoff.db'}", clock=moved_clock(request))
    yield opened
    await opened.close()


def moved_clock(request: pytest.FixtureRequest) -> Clock | None:
    """The test's `clock`, if it asks for it (to move time by hand): the store it opens
    judges by it too (a test cannot move PostgreSQL's `now()`); otherwise None, the
    database's (a fixture that only stamps records with it leaves the store alone)."""
    if "clock" not in inspect.signature(request.function).parameters:
        return None
    found: Clock = request.getfixturevalue("clock")
    return found


class Clock:
    """A clock tests move by hand: no sleeping."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 11, 29, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


@pytest.fixture
def clock() -> Clock:
    """A clock moved by hand; the `store` and `file_store` of a test that asks for it are
    opened with it, so it also stands in for the database's where the store judges a
    deadline."""
    return Clock()


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the example agents' outside world (payments, e-mail) at a fresh file."""
    path = tmp_path / "world.db"
    monkeypatch.setenv("SIGNOFF_WORLD_DB", str(path))
    return path


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[FakeSlackProcess]:
    """The fake Slack Web API in a process of its own."""
    process = FakeSlackProcess(tmp_path)
    yield process
    process.stop()


@pytest.fixture
def make_runtime(store: Store) -> Callable[..., Runtime]:
    def make(agents: Iterable[Agent], **options: Any) -> Runtime:
        options.setdefault("worker_id", f"test-worker-{os.getpid()}")
        return Runtime(store, agents, **options)

    return make


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    """`signoff serve` workers the test starts (append them): killed at its end."""
    started: list[Worker] = []
    yield started
    for worker in started:
        worker.kill()
