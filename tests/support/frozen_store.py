"""A store as a frozen worker sees it."""

from __future__ import annotations

from typing import Any

from store import Store


class FrozenRenewals:
    """A store as seen by a worker that is frozen (SIGSTOP) while its tool or model call is
    pending: its lease renewals never reach the database, everything else does."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def renew_lease(self, *args: Any, **kwargs: Any) -> bool:
        return True
