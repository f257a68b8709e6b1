"""The PostgreSQL store: a pool of asyncpg connections, one transaction per write.

Writes run a `store.core` body on one pooled connection inside a READ COMMITTED transaction;
where SQLite's single writer serializes everything, the PostgreSQL queries lock what they
must (a run's row while its history grows, an approval while a vote lands, a lineage while
an idempotency key is claimed). A transaction the server aborted for a deadlock or a
serialization failure changed nothing and is run again, from a fresh body. Times travel as
epoch seconds and NUL characters are escaped (codecs on each connection, `store.postgres.lossless`),
so `store.rows` serves both backends.

Behind a pooler in transaction mode (PgBouncer's `pool_mode = transaction`, where each
transaction may get another server connection): `pool_mode="transaction"` turns off asyncpg's
named prepared statements (which live in one server session) and runs every read in a
transaction of its own, so its prepare and execute meet the same server connection; LISTEN,
which lives in a session, connects straight to the server at `listen_at` ("host:port"). The
advisory locks are all transaction-scoped, so they hold through the pooler unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import time
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence
from contextlib import contextmanager
from typing import Any
from typing import TypeVar
from urllib.parse import urlsplit
from urllib.parse import urlunsplit

from store import core
from store import errors
from store import migration
from store import rows
from store.base import DEFAULT_PROTECTED_FACTS
from store.base import Batch
from store.base import Committed
from store.core import MakeBody
from store.core import Stmt
from store.postgres import lossless
from store.postgres import sql
from store.postgres import together
from store.records import Approval
from store.records import Effect
from store.rows import Clock
from store.sql_store import SqlStore

try:
    import asyncpg
except ImportError as exc:  # pragma: no cover - depends on the install
    raise errors.UnsupportedURL(
        "the PostgreSQL backend needs asyncpg: pip install 'signoff[postgres]'"
    ) from exc

T = TypeVar("T")
DIALECT = "postgres"
Q = sql.load()
RETRIES = 5
HEALTH_TIMEOUT = 2.0  # seconds a readiness probe waits for the server
POOL_MODES = ("session", "transaction")
IDLE_IN_TRANSACTION = {"idle_in_transaction_session_timeout": "10s"}
"""A worker frozen (SIGSTOP, a stalled VM) in the middle of a transaction would hold its
runs' rows locked for as long as it stays frozen, and its runs would never flow to another
worker however long ago their leases lapsed; the server ends such a transaction instead. The
store's transactions never wait on anything but their own statements. (Behind a pooler in
transaction mode the pooler's own `idle_transaction_timeout` does this.)"""

_RUN_AGAIN = (
    asyncpg.DeadlockDetectedError,
    asyncpg.SerializationError,
    # A migration changed a table under a statement prepared before it (`SELECT *` of a
    # table a column was added to): asyncpg prepares it again, but not inside a transaction.
    asyncpg.InvalidCachedStatementError,
)
"""A transaction the server aborted, having changed nothing: run it again, from a fresh body."""
_STEP_REFUSED = (
    asyncpg.DivisionByZeroError,  # `commit_step`'s way of saying a check failed
    asyncpg.IntegrityConstraintViolationError,
    *_RUN_AGAIN,
)
_EPOCH_2000 = 946_684_800  # PostgreSQL counts time in microseconds from 2000-01-01 UTC


@contextmanager
def translate_errors() -> Iterator[None]:
    """Map asyncpg errors to store errors, once, for every call."""
    try:
        yield
    except asyncpg.UniqueViolationError as exc:
        raise errors.AlreadyExists(f"already exists ({exc.detail or exc})") from exc
    except asyncpg.ForeignKeyViolationError as exc:
        raise errors.NotFound("the record this write refers to does not exist") from exc
    except asyncpg.IntegrityConstraintViolationError as exc:
        raise errors.Conflict(str(exc)) from exc
    except asyncpg.DiskFullError as exc:
        raise errors.DiskFull(
            "the database's disk is full: nothing was written; free space and retry"
        ) from exc
    except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
        raise errors.DatabaseError(f"postgresql: {exc}") from exc


class _Connection(asyncpg.Connection):  # type: ignore[misc]
    """A pooled connection returned without a reset round trip: the store leaves no session
    state behind (its locks end with their transactions, it listens on its own connection)."""

    def get_reset_query(self) -> str:
        return ""


async def _init_connection(conn: asyncpg.Connection) -> None:
    await conn.set_type_codec(
        "timestamptz",
        schema="pg_catalog",
        encoder=lambda seconds: (round((seconds - _EPOCH_2000) * 1_000_000),),
        decoder=lambda value: value[0] / 1_000_000 + _EPOCH_2000,
        format="tuple",
    )
    await conn.set_type_codec(
        "text",
        schema="pg_catalog",
        encoder=lossless.text_in,
        decoder=lossless.text_out,
        format="text",
    )
    for json_type in ("json", "jsonb"):
        await conn.set_type_codec(
            json_type, schema="pg_catalog", encoder=lossless.json_in, decoder=lossless.json_out
        )


class PostgresStore(SqlStore):
    def __init__(
        self,
        url: str,
        *,
        pool_size: int = 10,
        pool_mode: str = "session",
        listen_at: str | None = None,
        protected_facts: frozenset[str] = DEFAULT_PROTECTED_FACTS,
        clock: Clock | None = None,
    ) -> None:
        if pool_size < 1:
            raise ValueError(f"pool_size must be at least 1, not {pool_size}")
        check_pool_mode(url, pool_mode, listen_at)
        self.url = url
        self.protected_facts = protected_facts
        self.clock = clock
        self.known_schema = migration.latest_version(DIALECT)
        self._pool_size = pool_size
        self._pooled = pool_mode == "transaction"
        self._listen_at = listen_at
        self._listen_url = url if listen_at is None else listen_url(url, listen_at)
        self._pool: asyncpg.Pool | None = None
        self._deciding = together.Together(self._decisions)
        self._together = {
            name: together.Together(functools.partial(self._steps, name))
            for name in ("commit_step", "start_step")
        }

    async def open(self, *, migrate: bool = True) -> PostgresStore:
        try:
            with translate_errors():
                self._pool = await asyncpg.create_pool(
                    self.url,
                    min_size=1,
                    max_size=self._pool_size,
                    init=_init_connection,
                    connection_class=_Connection,
                    **(
                        {"statement_cache_size": 0}
                        if self._pooled
                        else {"server_settings": IDLE_IN_TRANSACTION}
                    ),
                )
                await self._check_schema()
                if migrate:
                    await self.migrate()
        except BaseException:
            await self.close()
            raise
        return self

    async def sibling(self) -> PostgresStore | None:
        twin = PostgresStore(
            self.url,
            pool_size=1,
            pool_mode="transaction" if self._pooled else "session",
            listen_at=self._listen_at,
            protected_facts=self.protected_facts,
            clock=self.clock,
        )
        return await twin.open(migrate=False)

    async def _check_schema(self) -> None:
        if (await self._read("current_schema", {}))[0][0] is None:
            raise errors.UnsupportedURL(
                "no schema of the URL's search_path exists in the database: create it "
                "(CREATE SCHEMA name) or leave search_path out"
            )
        version = await self.schema_version()
        migration.refuse_newer(DIALECT, version, "the database")
        if version == 0 and (await self._read("other_tables", {}))[0][0]:
            raise errors.ForeignDatabase(
                "the database's schema holds another application's tables and no Signoff "
                "schema; point SIGNOFF_DATABASE_URL at a new database (or search_path schema)"
            )

    async def migrate(self, *, stop_the_world: bool = False) -> tuple[int, int]:
        """Under an advisory lock: two processes at once apply each migration once (the
        second waits, then finds nothing to do). Every worker listening is told the schema
        moved."""
        with translate_errors():
            async with self._pool_().acquire() as conn, conn.transaction():
                await conn.execute(Q["lock_migrations"].sql)
                await conn.execute(Q["create_schema_table"].sql)
                before = await conn.fetchval(Q["schema_version"].sql)
                steps = migration.pending(DIALECT, before)
                if not steps:
                    return before, before
                await _clear_the_way(conn, before, steps, stop_the_world=stop_the_world)
                for step in steps:
                    await conn.execute(step.sql)
                    record = Q["record_migration"]
                    params = {"version": step.version, "name": step.name, "applied_at": time.time()}
                    await conn.execute(record.sql, *record.args(params))
                await conn.execute(Q["notify_schema_changed"].sql)
        return before, steps[-1].version

    async def lease_holders(self) -> list[migration.LeaseHolder]:
        with translate_errors():
            async with self._pool_().acquire() as conn, conn.transaction():
                if not await conn.fetchval(Q["schema_table_exists"].sql):
                    return []
                version = await conn.fetchval(Q["schema_version"].sql)
                return await lease_holders(conn, version) if version else []

    async def schema_version(self) -> int:
        with translate_errors():
            # in a transaction: behind a transaction-mode pooler, both on one server connection
            async with self._pool_().acquire() as conn, conn.transaction():
                if not await conn.fetchval(Q["schema_table_exists"].sql):
                    return 0
                return int(await conn.fetchval(Q["schema_version"].sql))

    async def health(self) -> dict[str, str]:
        """What keeps the store from serving now: the server unreachable (within
        `HEALTH_TIMEOUT`), or a schema that is not the one this Signoff runs on."""
        try:
            version = await asyncio.wait_for(self.schema_version(), HEALTH_TIMEOUT)
        except (errors.StoreError, TimeoutError) as exc:
            return {"database": f"cannot read the database: {exc or 'timed out'}"}
        problem = migration.schema_problem(version, self.known_schema)
        return {} if problem is None else {"schema": problem}

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    def _pool_(self) -> asyncpg.Pool:
        if self._pool is None:
            raise errors.DatabaseError("the store is closed")
        return self._pool

    async def _write(self, make: MakeBody[T], *, durable: bool = True) -> T:
        async def once() -> T:
            async with self._pool_().acquire() as conn:
                # behind a transaction-mode pooler a statement's prepare and execute
                # meet one server connection only inside a transaction
                return await _drive(conn, make, durable=durable, alone=not self._pooled)

        with translate_errors():
            return await _run_again(once)

    async def commit(self, batch: Batch) -> Committed:
        """A step's write in one round trip (`core.step_statement`, `core.start_statement`);
        any other batch, and one the statement refused (writing nothing), through the body."""
        step = core.step_statement(batch)
        if step is not None:
            if await self._commit_step(step) is not None:
                return Committed()
        elif (start := core.start_statement(batch)) is not None:
            answer = await self._commit_step(start)
            if answer is not None:
                return await self._started(answer)
        return await super().commit(batch)

    async def _commit_step(self, step: Stmt) -> Any:
        """What the step's one statement answered, once it committed; None when a check
        failed, a collision or a deadlock aborted it, all of which the body reports or retries."""
        args = Q[step.name].args(step.params)
        return await self._together[step.name].write(step.params["run_id"], args)

    async def _steps(self, name: str, batch: Sequence[Sequence[Any]]) -> list[Any]:
        """`name` (`commit_step`, `start_step`) for the steps of several runs in one
        transaction (`together`), each one's answer; one alone is one round trip, as it always
        was, and None when refused. A batch one of them refused raises, and is tried again one
        by one."""
        query = Q[name]
        with translate_errors():
            if len(batch) > 1:
                async with self._pool_().acquire() as conn, _transaction(conn, self._pooled):
                    return [row[0] for row in await conn.fetchmany(query.sql, batch)]
            try:
                async with self._pool_().acquire() as conn, _transaction(conn, self._pooled):
                    return [await conn.fetchval(query.sql, *batch[0])]
            except _STEP_REFUSED:
                return [None]

    async def _decide_at_once(
        self, params: dict[str, Any], event: dict[str, Any]
    ) -> Approval | None:
        query = Q["decide_at_once"]
        args = query.args(params | {f"ev_{name}": value for name, value in event.items()})
        row = await self._deciding.write(params["id"], args)
        return None if row is None else rows.approval_from_row(row)

    async def _decisions(self, batch: Sequence[Sequence[Any]]) -> list[Any]:
        """`decide_at_once` for each of a batch in one transaction (`together`): the row of
        each it decided, None for each it did not. One alone is one round trip, as it
        always was."""
        query = Q["decide_at_once"]
        at = query.names.index("id")

        async def once() -> list[Any]:
            async with self._pool_().acquire() as conn, _transaction(conn, self._pooled):
                if len(batch) > 1:
                    found = {r["id"]: r for r in await conn.fetchmany(query.sql, batch)}
                    return [found.get(args[at]) for args in batch]
                return [await conn.fetchrow(query.sql, *batch[0])]

        with translate_errors():
            return await _run_again(once)

    async def _started(self, answer: str) -> Committed:
        """`start_step`'s answer as the body's: the calls it did not start, each with the
        ledger row that stopped it, and the keys of those started under a new generation."""
        found = json.loads(answer)
        committed = Committed(keys=dict(found["keys"]))
        for call_id, (reason, run_id, other) in found["refused"].items():
            refused: dict[str, Effect] = getattr(committed, reason)  # preempted, conflicts, blocked
            refused[call_id] = await self.get_effect(run_id, other)
        return committed

    async def _read(self, name: str, params: dict[str, Any]) -> list[Any]:
        query = Q[name]
        with translate_errors():
            if not self._pooled:
                return list(await self._pool_().fetch(query.sql, *query.args(params)))
            async with self._pool_().acquire() as conn, conn.transaction():
                return list(await conn.fetch(query.sql, *query.args(params)))

    async def listen(self, callback: Callable[[str], None]) -> Callable[[], Awaitable[None]]:
        """Call `callback(topic)` for each outbox row any process commits (a decision, a new
        approval and its deadline, a page, a finished run); returns the function that stops.
        On a dedicated connection, opened again if it is lost (meanwhile the polls cover)."""
        from store.postgres.listener import Listener  # after asyncpg's import is checked

        listener = Listener(self._listen_url, callback)
        await listener.connect()
        return listener.stop


def _transaction(
    conn: asyncpg.Connection, pooled: bool
) -> contextlib.AbstractAsyncContextManager[Any]:
    """Behind a transaction-mode pooler, a statement's prepare and execute meet one server
    connection only inside a transaction; else the statements commit by themselves."""
    return conn.transaction() if pooled else contextlib.nullcontext()


def check_pool_mode(url: str, pool_mode: str, listen_at: str | None) -> None:
    """Refuse, naming the fix, what cannot work behind a transaction-mode pooler."""
    if pool_mode not in POOL_MODES:
        raise errors.UnsupportedURL(
            f"pool_mode={pool_mode!r} in the database URL: use {' or '.join(POOL_MODES)}"
        )
    if pool_mode != "transaction":
        return
    if "search_path=" in url:
        raise errors.UnsupportedURL(
            "search_path in the URL is a session setting, which a transaction-mode pooler "
            "does not keep: give Signoff a database of its own, or set the role's search_path "
            "(ALTER ROLE ... SET search_path)"
        )
    if listen_at is None:
        raise errors.UnsupportedURL(
            "pool_mode=transaction needs listen_at=host:port, the PostgreSQL server itself: "
            "LISTEN lives in a session, which a transaction-mode pooler does not keep"
        )


def listen_url(url: str, listen_at: str) -> str:
    """`url` with its host and port replaced by `listen_at` ("host:port")."""
    parts = urlsplit(url)
    credentials = parts.netloc.rpartition("@")[0]
    netloc = f"{credentials}@{listen_at}" if credentials else listen_at
    return urlunsplit(parts._replace(netloc=netloc))


async def _clear_the_way(
    conn: asyncpg.Connection,
    before: int,
    steps: tuple[migration.Migration, ...],
    *,
    stop_the_world: bool,
) -> None:
    """Refuse the migrations while lease holders they would leave behind run, or (stopping
    the world) take those holders' leases. No lease is taken or given meanwhile."""
    if before == 0:
        return  # a new database: nothing holds a lease
    await conn.execute(Q["hold_leases_still"].sql)
    holders = await lease_holders(conn, before)
    blocking = migration.in_the_way(steps, holders)
    if not stop_the_world:
        migration.refuse_in_the_way(steps, blocking)
    for owner in {holder.worker for holder in blocking}:
        await conn.execute(Q["take_leases"].sql, *Q["take_leases"].args({"owner": owner}))


async def lease_holders(conn: asyncpg.Connection, version: int) -> list[migration.LeaseHolder]:
    """The workers holding live leases on a database at schema `version` (1 or later), with
    the schema each runs."""
    said = await conn.fetchval(Q["lease_schema_kept"].sql)
    query = Q["lease_holders"] if said else Q["lease_holders_unsaid"]
    return [migration.LeaseHolder(*row) for row in await conn.fetch(query.sql)]


async def _run_again(once: Callable[[], Awaitable[T]]) -> T:
    """What `once` (a whole transaction) returns, run again after a short backoff while the
    server aborts it having changed nothing (`_RUN_AGAIN`), at most `RETRIES` times."""
    for attempt in range(RETRIES - 1):
        try:
            return await once()
        except _RUN_AGAIN:
            await asyncio.sleep(0.005 * 2**attempt)
    return await once()


async def _drive(conn: asyncpg.Connection, make: MakeBody[T], *, durable: bool, alone: bool) -> T:
    """Run a body on `conn` in one transaction, begun at its first statement that has SQL
    here. A first statement the body says may commit alone (`Stmt.alone`) is sent without
    one when `alone` allows: one round trip instead of three (BEGIN, it, COMMIT); a write
    that need not be `durable` must then say so itself (`{unsynced}`), else it takes the
    transaction and its `SET LOCAL`."""
    body = make()
    async with contextlib.AsyncExitStack() as transaction:
        begun = sent_alone = False
        try:
            stmt = next(body)
            while True:
                query = Q[stmt.name]
                if query.sql and not begun:
                    if sent_alone:
                        raise RuntimeError(f"{stmt.name} follows a statement committed alone")
                    if alone and stmt.alone and (durable or query.unsynced):
                        sent_alone = True
                    else:
                        await transaction.enter_async_context(conn.transaction())
                        begun = True
                        if not durable:
                            await conn.execute("SET LOCAL synchronous_commit = off")
                stmt = body.send(await _execute(conn, stmt))
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        finally:
            body.close()
    raise AssertionError("unreachable")


async def _execute(conn: asyncpg.Connection, stmt: Stmt) -> Any:
    query = Q[stmt.name]
    if not query.sql:
        return None
    if stmt.fetch == "many":
        await conn.executemany(query.sql, [query.args(p) for p in stmt.params])
        return None
    args = query.args(stmt.params)
    if stmt.fetch == "all":
        return await conn.fetch(query.sql, *args)
    if stmt.fetch == "one":
        return await conn.fetchrow(query.sql, *args)
    status = await conn.execute(query.sql, *args)
    return int(status.rsplit(" ", 1)[-1]) if stmt.fetch == "count" else None
