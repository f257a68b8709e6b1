"""A store as a frozen worker sees it."""

from __future__ import annotations

from typing import Any

from .wrapped_store import WrappedStore


class FrozenRenewals(WrappedStore):
    """A store as seen by a worker that is frozen (SIGSTOP) while its tool or model call is
    pending: its lease renewals never reach the database, everything else does."""

    async def renew_lease(self, *args: Any, **kwargs: Any) -> bool:
        return True
