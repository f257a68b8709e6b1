"""An audit sink's place in the trail, kept in the database: the last event it delivered (a
cursor in commit order) and which process streams it (a lease, taken over when it lapses),
so a restart neither drops nor sends the trail again, and two servers never both stream it."""

from __future__ import annotations

from store import Store


class SinkLease:
    def __init__(self, store: Store, name: str, owner: str, *, ttl: float) -> None:
        self._store = store
        self.name = name
        self.owner = owner
        self.ttl = ttl

    async def claim(self) -> int | None:
        """Take or renew the lease; the cursor (the last event delivered), or None while
        another process holds it."""
        return await self._store.claim_sink(self.name, self.owner, ttl=self.ttl)

    async def advance(self, start: int, to: int) -> bool:
        """Move the cursor from `start` to `to` (compare-and-set, holding the lease)."""
        return await self._store.advance_sink(self.name, self.owner, start=start, to=to)

    async def lag(self, cursor: int) -> int:
        """How many events were written after the cursor."""
        return await self._store.count_audit_after(cursor)

    async def release(self) -> None:
        await self._store.release_sink(self.name, self.owner)
