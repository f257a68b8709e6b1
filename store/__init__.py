"""Durable state and nothing else: records, one Store interface, and its backends."""

from __future__ import annotations

import threading
import warnings
import weakref
from collections.abc import Generator
from types import TracebackType
from typing import Any

from store import errors
from store.base import DEFAULT_PROTECTED_FACTS, Batch, Committed, PageSettlement, Store
from store.records import (
    TERMINAL_STATUSES,
    Approval,
    ApprovalState,
    AuditEvent,
    Budget,
    Checkpoint,
    Delivery,
    Effect,
    EffectOutcome,
    EffectStatus,
    Fact,
    Message,
    Page,
    Reversibility,
    Run,
    RunState,
    RunStatus,
    ToolCall,
    Usage,
)

__all__ = [
    "DEFAULT_PROTECTED_FACTS",
    "TERMINAL_STATUSES",
    "Approval",
    "ApprovalState",
    "AuditEvent",
    "Batch",
    "Budget",
    "Checkpoint",
    "Committed",
    "Delivery",
    "Effect",
    "EffectOutcome",
    "EffectStatus",
    "Fact",
    "Message",
    "Page",
    "PageSettlement",
    "Reversibility",
    "Run",
    "RunState",
    "RunStatus",
    "Store",
    "ToolCall",
    "Usage",
    "errors",
    "open_store",
    "sqlite_path",
]


def sqlite_path(url: str) -> str:
    """`sqlite:///relative.db`, `sqlite:////abs/path.db` or `sqlite://:memory:` -> a path."""
    if url in ("sqlite://:memory:", "sqlite:///:memory:"):
        return ":memory:"
    if not url.startswith("sqlite:///") or len(url) == len("sqlite:///"):
        raise errors.UnsupportedURL(
            f"not a SQLite URL: {url!r} (expected sqlite:///path/to/file.db or sqlite://:memory:)"
        )
    return url[len("sqlite:///") :]


def open_store(url: str, *, migrate: bool = True, **options: Any) -> OpenStore:
    """Open the store a URL names, applying pending migrations unless `migrate=False`.

    `store = await open_store(url)` (then `await store.close()`), or
    `async with open_store(url) as store:`, which closes it however the block ends.
    Options go to the backend, e.g. `synchronous="NORMAL"` or `protected_facts=...` for SQLite.
    """
    return OpenStore(url, migrate=migrate, options=options)


class OpenStore:
    """What `open_store` returns: await it for the store, or use it with `async with`."""

    def __init__(self, url: str, *, migrate: bool, options: dict[str, Any]) -> None:
        self.url = url
        self.migrate = migrate
        self.options = options
        self._store: Store | None = None

    def __await__(self) -> Generator[Any, None, Store]:
        return self._open().__await__()

    async def __aenter__(self) -> Store:
        self._store = await self._open()
        return self._store

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        store, self._store = self._store, None
        if store is not None:
            await store.close()

    async def _open(self) -> Store:
        store = await _open_backend(self.url, migrate=self.migrate, **self.options)
        _unclosed.add(store)
        return store


async def _open_backend(url: str, *, migrate: bool, **options: Any) -> Store:
    scheme = url.split(":", 1)[0]
    if scheme == "sqlite":
        from store.sqlite import SqliteStore

        return await SqliteStore(sqlite_path(url), **options).open(migrate=migrate)
    if scheme in ("postgres", "postgresql"):
        raise errors.UnsupportedURL(
            f"{url!r}: the PostgreSQL backend is not built yet; use sqlite:///signoff.db"
        )
    raise errors.UnsupportedURL(
        f"no store for {url!r}: use sqlite:///path/to/file.db or sqlite://:memory:"
    )


# Stores opened here and maybe never closed (a script raised, or forgot close()).
_unclosed: weakref.WeakSet[Any] = weakref.WeakSet()


def _release_unclosed() -> None:
    """At interpreter exit, before Python waits for non-daemon threads: stop the connection
    threads of stores nobody closed, so they cannot keep the process alive. What was committed
    is durable already; the writer's thread pool is shut down by concurrent.futures."""
    for store in list(_unclosed):
        reader = getattr(store, "_reader", None)  # SqliteStore's aiosqlite connection
        if reader is None:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # no event loop is left to hand a future to
            reader.stop()


# Called before the interpreter joins non-daemon threads (atexit would be too late); the
# hook concurrent.futures and asyncio.to_thread rely on for the same reason.
threading._register_atexit(_release_unclosed)  # type: ignore[attr-defined]
