"""Durable state and nothing else: records, one Store interface, and its backends."""

from __future__ import annotations

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


async def open_store(url: str, *, migrate: bool = True, **options: Any) -> Store:
    """Open the store a URL names, applying pending migrations unless `migrate=False`.

    Options go to the backend, e.g. `synchronous="NORMAL"` or `protected_facts=...` for SQLite.
    """
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
