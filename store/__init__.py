"""Durable state and nothing else: records, one Store interface, and its backends.

The records and the `Store` interface are imported from their modules when first used (PEP
562): a process that only needs a database URL's path or `open_store` (a CLI command before
it reads) does not build every record's model; the backend it opens imports them.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Generator
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING
from typing import Any
from urllib.parse import parse_qsl
from urllib.parse import urlencode

from store import errors

if TYPE_CHECKING:
    from store.base import DEFAULT_PROTECTED_FACTS
    from store.base import Batch
    from store.base import Committed
    from store.base import PageSettlement
    from store.base import Store
    from store.records import TERMINAL_STATUSES
    from store.records import Approval
    from store.records import ApprovalState
    from store.records import AuditEvent
    from store.records import Budget
    from store.records import Checkpoint
    from store.records import Delivery
    from store.records import Effect
    from store.records import EffectOutcome
    from store.records import EffectStatus
    from store.records import Fact
    from store.records import Message
    from store.records import Page
    from store.records import Reversibility
    from store.records import Run
    from store.records import RunState
    from store.records import RunStatus
    from store.records import ToolCall
    from store.records import Usage

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


_BASE = ("DEFAULT_PROTECTED_FACTS", "Batch", "Committed", "PageSettlement", "Store")
_HERE = ("errors", "open_store", "sqlite_path")
_HOME = {n: "store.base" if n in _BASE else "store.records" for n in __all__ if n not in _HERE}


def __getattr__(name: str) -> Any:
    """A record or the `Store` interface, from its module on first use."""
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'store' has no attribute {name!r}")
    # `__import__`, not `importlib.import_module`: `-X importtime` then names the module
    value = getattr(__import__(home, fromlist=[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


SQLITE_URL_OPTIONS: dict[str, type] = {"synchronous": str, "busy_timeout_ms": int}
POSTGRES_URL_OPTIONS: dict[str, type] = {"pool_size": int, "pool_mode": str, "listen_at": str}
"""A backend's own options, which its URL may carry: `sqlite:///s.db?synchronous=NORMAL`,
`postgresql://db/signoff?pool_size=20` (other PostgreSQL parameters go to the server).
Behind PgBouncer in transaction mode: `?pool_mode=transaction&listen_at=db-host:5432` (see
`store.postgres.store.PostgresStore`)."""


def url_options(url: str, allowed: dict[str, type]) -> tuple[str, dict[str, Any]]:
    """Split a backend's own options off a URL's query; the rest of the query stays."""
    base, mark, query = url.partition("?")
    if not mark:
        return url, {}
    kept, options = [], {}
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key not in allowed:
            kept.append((key, value))
            continue
        try:
            options[key] = allowed[key](value)
        except ValueError:
            raise errors.UnsupportedURL(
                f"{key}={value!r} in the database URL is not a {allowed[key].__name__}"
            ) from None
    return (f"{base}?{urlencode(kept)}" if kept else base), options


def sqlite_path(url: str) -> str:
    """`sqlite:///relative.db`, `sqlite:////abs/path.db` or `sqlite://:memory:` -> a path
    (options in the query, `?synchronous=NORMAL`, are not part of it)."""
    url, _ = url_options(url, SQLITE_URL_OPTIONS)
    if "?" in url:
        unknown = ", ".join(key for key, _ in parse_qsl(url.partition("?")[2]))
        raise errors.UnsupportedURL(
            f"unknown SQLite option(s) in the database URL: {unknown} "
            f"(known: {', '.join(SQLITE_URL_OPTIONS)})"
        )
    if url in ("sqlite://:memory:", "sqlite:///:memory:"):
        return ":memory:"
    if not url.startswith("sqlite:///") or len(url) == len("sqlite:///"):
        raise errors.UnsupportedURL(
            f"not a SQLite URL: {url!r} (expected sqlite:///path/to/file.db or sqlite://:memory:)"
        )
    return url[len("sqlite:///") :]


def open_store(
    url: str,
    *,
    migrate: bool = True,
    clock: Callable[[], datetime] | None = None,
    **options: Any,
) -> OpenStore:
    """Open the store a URL names, applying pending migrations unless `migrate=False`.

    `store = await open_store(url)` (then `await store.close()`), or
    `async with open_store(url) as store:`, which closes it however the block ends.
    `clock` is what the store judges deadlines by (and answers `database_now` with); by
    default the database's own clock. Give one only where something else must say what time
    it is (a test that moves time by hand: it cannot move PostgreSQL's `now()`).
    Options go to the backend, e.g. `synchronous="NORMAL"` for SQLite, `pool_size=20` for
    PostgreSQL (`postgresql://user@host/db`; `?search_path=schema` picks a schema), or
    `protected_facts=...` for either.
    """
    if clock is not None:
        options = options | {"clock": clock}
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
        return await _open_backend(self.url, migrate=self.migrate, **self.options)


async def _open_backend(url: str, *, migrate: bool, **options: Any) -> Store:
    scheme = url.split(":", 1)[0]
    # Options given in code win over those in the URL.
    if scheme == "sqlite":
        from store.sqlite import SqliteStore

        path, in_url = sqlite_path(url), url_options(url, SQLITE_URL_OPTIONS)[1]
        return await SqliteStore(path, **(in_url | options)).open(migrate=migrate)
    if scheme in ("postgres", "postgresql"):
        from store.postgres import PostgresStore

        url, in_url = url_options(url, POSTGRES_URL_OPTIONS)
        return await PostgresStore(url, **(in_url | options)).open(migrate=migrate)
    raise errors.UnsupportedURL(
        f"no store for {url!r}: use sqlite:///path/to/file.db, sqlite://:memory: or "
        "postgresql://user@host/database"
    )
