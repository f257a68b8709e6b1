"""Shared fixtures: a `store` per backend, a runtime factory, a clock you can move, a world."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from runtime import Agent, Runtime
from store import Store, open_store

STORE_BACKENDS = ["sqlite-file", "sqlite-memory"]


def store_url(backend: str, tmp_path: Path) -> str:
    if backend == "sqlite-file":
        return f"sqlite:///{tmp_path / 'signoff.db'}"
    if backend == "sqlite-memory":
        return "sqlite://:memory:"
    raise ValueError(backend)


@pytest.fixture(params=STORE_BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """A fresh, migrated store on each backend."""
    opened = await open_store(store_url(request.param, tmp_path))
    yield opened
    await opened.close()


@pytest.fixture
async def file_store(tmp_path: Path) -> AsyncIterator[Store]:
    """A store on a real SQLite file (for tests that need a second connection or process)."""
    opened = await open_store(f"sqlite:///{tmp_path / 'signoff.db'}")
    yield opened
    await opened.close()


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
    return Clock()


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the example agents' outside world (payments, e-mail) at a fresh file."""
    path = tmp_path / "world.db"
    monkeypatch.setenv("SIGNOFF_WORLD_DB", str(path))
    return path


@pytest.fixture
def make_runtime(store: Store) -> Callable[..., Runtime]:
    def make(agents: Iterable[Agent], **options: Any) -> Runtime:
        options.setdefault("worker_id", f"test-worker-{os.getpid()}")
        return Runtime(store, agents, **options)

    return make
