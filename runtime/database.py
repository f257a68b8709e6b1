"""`Database`: the door a process opens the durable state by. It opens (and migrates) the
store a URL names, builds the `Runtime` over it, and offers what the surfaces need of the
database itself besides the runtime's commands: the read views (`queries`), the delivery
bookkeeping (`deliveries`), upkeep (migrate, prune, health, the database's clock) and
closing it. The store stays inside; no surface holds it."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING
from typing import Any

from runtime.queries import Queries
from store import Store
from store import migration
from store import open_store


@dataclass(frozen=True, slots=True)
class MigrationStep:
    """One migration applied: `0020 lease_schema`, whether workers of the schema before it
    may run on beside it, and why."""

    label: str
    safe: bool
    why: str


@dataclass(frozen=True, slots=True)
class Migrated:
    """What `migrate` did: the versions it went between, the migrations it applied, and the
    workers holding leases that it left to step aside, or whose leases it took."""

    before: int
    after: int
    steps: tuple[MigrationStep, ...] = ()
    stepping_aside: tuple[str, ...] = ()
    """Lease holders of an older schema that step aside (a safe migration): replace them."""
    leases_taken: tuple[str, ...] = ()
    """Lease holders the migration would have left behind, whose leases it took (stopping the
    world): stop them."""


if TYPE_CHECKING:
    from runtime.agent import Agent
    from runtime.deliveries import Deliveries
    from runtime.engine import Runtime
    from runtime.notifier import Notifier
    from runtime.runs import ClockSkew


class Database:
    def __init__(self, store: Store) -> None:
        self._store = store
        self.queries = Queries(store)

    @cached_property
    def deliveries(self) -> Deliveries:
        """The delivery bookkeeping, loaded when a sender first asks (a read never does)."""
        from runtime.deliveries import Deliveries

        return Deliveries(self._store)

    @classmethod
    async def open(cls, url: str, *, migrate: bool = True, **options: Any) -> Database:
        """Open the database a URL names, applying pending migrations unless `migrate=False`;
        options go to the backend (`synchronous` for SQLite, `pool_size` for PostgreSQL)."""
        return cls(await open_store(url, migrate=migrate, **options))

    @property
    def url(self) -> str:
        return self._store.url

    def runtime(
        self, agents: Iterable[Agent] = (), notifier: Notifier | None = None, **options: Any
    ) -> Runtime:
        """The runtime over this database (`Runtime`'s keyword options); the engine is
        imported only here, so a process that only reads never loads it."""
        from runtime.engine import Runtime

        return Runtime(self._store, agents, notifier, **options)

    async def migrate(self, *, stop_the_world: bool = False) -> Migrated:
        """Create or upgrade the schema. `UnsafeMigration`, changing nothing, while workers
        the migrations would leave behind hold leases (naming them), unless
        `stop_the_world` takes their leases."""
        holders = await self._store.lease_holders()
        before, after = await self._store.migrate(stop_the_world=stop_the_world)
        dialect = "sqlite" if self.url.startswith("sqlite") else "postgres"
        steps = migration.applied(dialect, before, after)
        taken = migration.in_the_way(steps, holders) if stop_the_world else []
        older = [h for h in holders if steps and h not in taken and (h.schema or 0) < after]
        return Migrated(
            before,
            after,
            tuple(MigrationStep(m.label, m.safe, m.why) for m in steps),
            stepping_aside=tuple(map(str, older)),
            leases_taken=tuple(map(str, taken)),
        )

    async def prune(self, finished_before: datetime, *, include_audit: bool) -> tuple[int, int]:
        """Remove the lineages that finished before then (with `include_audit`, their audit
        events written before then too): (runs, audit events) removed."""
        return await self._store.prune(finished_before, include_audit=include_audit)

    def clock_skew(
        self,
        clock: Callable[[], datetime],
        *,
        unready_at: float,
        report: Callable[[float], None] | None = None,
    ) -> ClockSkew:
        """How far `clock` is from the database's, measured when asked."""
        from runtime.runs import ClockSkew

        return ClockSkew(self._store, clock, unready_at=unready_at, report=report)

    async def close(self) -> None:
        await self._store.close()
