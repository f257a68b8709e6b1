"""Numbered migrations build the expected schema, once; a newer database is refused untouched.

Also checks the named SQL file: every query has a description, every name a backend uses
exists, and every name is used.
"""

from __future__ import annotations

import ast
import hashlib
import re
import sqlite3
import time
from importlib.resources import files
from pathlib import Path

import pytest

from store import errors
from store import migration
from store import open_store
from store import queries
from store import schema
from store.schema.compare import difference
from store.sqlite import SqliteStore

STORE = files("store")
SQL_DIALECTS = sorted(queries.DIALECTS)
MIGRATION_DIALECTS = sorted(p.name for p in (STORE / "migrations").iterdir() if p.is_dir())
BACKEND_DIALECTS = [
    d
    for d in SQL_DIALECTS
    if (STORE / f"{d}.py").is_file() or (STORE / d / "__init__.py").is_file()
]
SHARED_SOURCES = (
    "core.py",
    "sql_store.py",
    "learned.py",
    "announce.py",
    "spend.py",
    "envelopes.py",
    "shared.py",
    "cool_off.py",
    "undo_ends.py",
)
"""The write logic and the Store methods every SQL backend runs (named queries, no SQL)."""
NO_OP = "-- (None: "
"""How a query file says a statement its dialect has no need of (a row lock) is empty."""


def applied(path: Path) -> list[tuple[int, str, float]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT version, name, applied_at FROM signoff_schema ORDER BY 1")
        return rows.fetchall()


def schema_of(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return schema.sqlite_schema_of(conn)
    finally:
        conn.close()


def assert_checked_in_schema(path: Path) -> None:
    """The file's schema is the one `docs/schema/sqlite.md` shows, what every migration builds."""
    problem = difference("sqlite", schema_of(path))
    assert problem is None, problem


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "signoff.db"


async def migrate(path: Path) -> None:
    store = await open_store(f"sqlite:///{path}")
    await store.close()


# migrations


async def test_all_migrations_on_an_empty_file_build_the_expected_schema(db: Path) -> None:
    await migrate(db)

    assert_checked_in_schema(db)
    assert [(v, n) for v, n, _ in applied(db)] == [
        (m.version, m.name) for m in migration.migrations("sqlite")
    ]


async def test_migrating_twice_changes_nothing(db: Path) -> None:
    await migrate(db)
    schema, versions = schema_of(db), applied(db)

    await migrate(db)
    store = await SqliteStore(str(db)).open()
    try:
        again = await store.migrate()
    finally:
        await store.close()

    latest = migration.latest_version("sqlite")
    assert again == (latest, latest)
    assert (schema_of(db), applied(db)) == (schema, versions)


async def test_open_without_migrate_applies_nothing(db: Path) -> None:
    store = await SqliteStore(str(db)).open(migrate=False)
    try:
        assert await store.schema_version() == 0
    finally:
        await store.close()

    assert schema_of(db) == schema.header("sqlite")


async def test_migrate_reports_the_versions_it_went_between(db: Path) -> None:
    store = await SqliteStore(str(db)).open(migrate=False)
    try:
        assert await store.migrate() == (0, migration.latest_version("sqlite"))
    finally:
        await store.close()

    assert_checked_in_schema(db)


async def test_a_version_1_database_upgrades_with_its_effects(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = migration.migrations("sqlite")[:1]
    with monkeypatch.context() as patched:
        patched.setattr(migration, "migrations", lambda dialect: first)
        await migrate(db)
    assert [v for v, _, _ in applied(db)] == [1]
    now = time.time()
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO runs (id, agent, task, status, budget, lineage_id, dry_run, created_at, "
            "updated_at) VALUES ('r1', 'a', 't', 'running', '{}', 'r1', 0, ?, ?)",
            (now, now),
        )
        for call, kind in (("c1", "read"), ("c2", "irreversible")):
            conn.execute(
                "INSERT INTO effects (run_id, call_id, lineage_id, step, tool, reversibility, "
                "idempotency_key, idempotent, status, started_at, args, result) "
                "VALUES ('r1', ?, 'r1', 1, 'x', ?, ?, 0, 'completed', ?, '{}', '1')",
                (call, kind, f"key-{call}", now),
            )
    conn.close()

    store = await open_store(f"sqlite:///{db}")
    try:
        assert [e.call_id for e in await store.list_effects("r1")] == ["c1", "c2"]
        found = await store.find_effect("r1", "key-c2")
        assert found is not None
        assert found.call_id == "c2"
    finally:
        await store.close()
    assert [v for v, _, _ in applied(db)] == list(range(1, migration.latest_version("sqlite") + 1))
    assert_checked_in_schema(db)


async def test_a_false_message_ts_is_cleared_so_a_click_can_name_the_card(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before `no_false_message_ts`, a post Slack answered ok without a ts was recorded
    with the ts '' or 'None'; after it, such a record has no message (a real one stays)."""
    every = migration.migrations("sqlite")
    before = next(m.version for m in every if m.name == "no_false_message_ts") - 1
    with monkeypatch.context() as patched:
        patched.setattr(migration, "migrations", lambda dialect: every[:before])
        await migrate(db)
    with sqlite3.connect(db) as conn:
        for ident, ts in (("a-empty", ""), ("a-none", "None"), ("a-real", "1712.000100")):
            conn.execute(
                "INSERT INTO approvals (id, tool, args, policy, state, required_approvals, "
                "reminders_sent, escalated, channel, message_ts, delivery, created_at) "
                "VALUES (?, 't', '{}', 'default', 'pending', 1, 0, 0, 'C1', ?, 'delivered', 0)",
                (ident, ts),
            )
        conn.execute(
            "INSERT INTO pages (id, reason, detail, channel, message_ts, delivery, created_at) "
            "VALUES ('p-none', 'in doubt', '', 'C2', 'None', 'delivered', 0)"
        )
    conn.close()
    await migrate(db)
    with sqlite3.connect(db) as conn:
        approvals = dict(conn.execute("SELECT id, message_ts FROM approvals"))
        pages = dict(conn.execute("SELECT id, message_ts FROM pages"))
    conn.close()
    assert approvals == {"a-empty": None, "a-none": None, "a-real": "1712.000100"}
    assert pages == {"p-none": None}


async def test_a_new_database_file_uses_wal(db: Path) -> None:
    await migrate(db)

    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


@pytest.mark.parametrize("made_by", ["signoff", "plain-sqlite"])
async def test_a_database_newer_than_the_code_is_refused_and_left_untouched(
    db: Path, made_by: str
) -> None:
    newer = migration.latest_version("sqlite") + 1
    if made_by == "signoff":
        await migrate(db)
    with sqlite3.connect(db) as conn:
        conn.execute(queries.load("sqlite")["create_schema_table"])
        conn.execute("INSERT INTO signoff_schema VALUES (?, 'from_the_future', 0)", (newer,))
    conn.close()
    before, versions = digest(db), applied(db)

    with pytest.raises(errors.SchemaTooNew) as refused:
        await open_store(f"sqlite:///{db}")

    message = str(refused.value)
    assert f"version {newer}" in message, message
    assert "upgrade Signoff" in message, message
    assert refused.value.details == {"found": newer, "supported": newer - 1}
    assert (digest(db), applied(db)) == (before, versions)


@pytest.mark.parametrize("dialect", MIGRATION_DIALECTS)
def test_migrations_are_numbered_1_to_n(dialect: str) -> None:
    names = sorted(p.name for p in (STORE / "migrations" / dialect).iterdir())
    found = migration.migrations(dialect)

    assert [m.version for m in found] == list(range(1, len(found) + 1))
    assert [f"{m.version:04d}_{m.name}.sql" for m in found] == names


def test_every_dialect_has_the_same_migrations() -> None:
    numbered = {
        dialect: [(m.version, m.name) for m in migration.migrations(dialect)]
        for dialect in MIGRATION_DIALECTS
    }

    assert MIGRATION_DIALECTS == SQL_DIALECTS
    assert all(found == numbered["sqlite"] for found in numbered.values()), numbered


def test_a_gap_in_the_numbering_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "migrations" / "gappy"
    folder.mkdir(parents=True)
    for name in ("0001_initial.sql", "0003_later.sql"):
        (folder / name).write_text("-- While older workers run: safe. A test.\nSELECT 1;")
    monkeypatch.setattr(migration, "files", lambda _package: tmp_path)

    with pytest.raises(ValueError, match=r"not numbered 1\.\.n: \[1, 3\]"):
        migration.migrations.__wrapped__("gappy")


# named queries


def used_query_names(source: str) -> set[str]:
    """Names the backend passes: `Q["name"]`, `Stmt("name", ...)`, `_read("name", ...)`..."""
    used = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            if node.value.id == "Q" and isinstance(node.slice, ast.Constant):
                used.add(node.slice.value)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in ("_read", "_read_one", "_update_one", "_one", "_changed_one", "Stmt"):
                used.add(node.args[0].value)
    return used


def test_every_query_has_a_description_and_only_row_locks_are_empty() -> None:
    entries = queries.parse(queries.source())

    assert all(e.description.startswith("-- ") and len(e.description) > 4 for e in entries)
    no_ops = {(e.name, e.dialect) for e in entries if e.description.startswith(NO_OP)}
    assert all(e.body for e in entries if (e.name, e.dialect) not in no_ops), [
        e.name for e in entries if not e.body and (e.name, e.dialect) not in no_ops
    ]
    assert not any(e.body for e in entries if (e.name, e.dialect) in no_ops), no_ops
    assert {name for name, _ in no_ops} == {
        "lock_migrations",
        "lock_lineage",
        "lock_key",
        "lock_page_reminders",
        "lock_spend",
        "add_to_counters",  # PostgreSQL's insert_holds adds to the counters in one statement
        "notify_run_ready",  # a wake-up for other processes, which one SQLite machine lacks
        "commit_step",  # one round trip saved, which SQLite in the process has no need of
        "start_step",  # the same for a step that starts mutating effects
        "create_run",  # and for a run's creation
        "lapsed_ready_runs",  # PostgreSQL's claim returns the old holders, SQLite's cannot
        "claim_schema",  # PostgreSQL's claim answers the schema's version, SQLite's cannot
        "hold_leases_still",  # SQLite migrates in a transaction no other process writes in
        "notify_schema_changed",  # a wake-up for other processes, which one machine lacks
        "decide_at_once",  # a decision in one round trip, which one SQLite process has no need of
    }


def backend_source(dialect: str) -> str:
    """The backend's modules (`store/<dialect>.py` and `store/<dialect>_*.py`, or the package
    `store/<dialect>/`) and the modules every backend shares."""
    own = (
        sorted((STORE / dialect).glob("*.py"))
        if (STORE / dialect).is_dir()
        else [STORE / f"{dialect}.py", *sorted(STORE.glob(f"{dialect}_*.py"))]
    )
    files = [*own, *(STORE / name for name in SHARED_SOURCES)]
    return "\n".join(path.read_text("utf-8") for path in files)


@pytest.mark.parametrize("dialect", BACKEND_DIALECTS)
def test_every_query_a_backend_uses_exists(dialect: str) -> None:
    used = used_query_names(backend_source(dialect))

    assert used, f"found no query names in store/{dialect}*.py"
    assert used <= set(queries.load(dialect)), used - set(queries.load(dialect))


def test_every_query_is_used_by_some_backend() -> None:
    used = set().union(*(used_query_names(backend_source(d)) for d in BACKEND_DIALECTS))

    assert set(queries.load("sqlite")) <= used, set(queries.load("sqlite")) - used


def test_every_dialect_defines_the_same_query_names() -> None:
    names = {dialect: sorted(queries.load(dialect)) for dialect in SQL_DIALECTS}

    assert all(found == names["sqlite"] for found in names.values()), names


@pytest.mark.parametrize(
    ("query", "index"),
    [
        ("completed_effect_by_key", "effects_by_key"),
        ("unsettled_effect_by_key", "effects_by_key"),
        ("declined_approval_by_key", "approvals_by_key"),
        ("duplicate_approval_by_key", "approvals_by_idempotency_key"),
        ("load_state", "sqlite_autoindex_checkpoints_1"),
        ("interrupted_undos", "audit_events_undo_started"),
        ("seq_at_step", "checkpoints_snapshots"),
        ("seq_at_step", "checkpoints_by_step"),  # time travel reads no whole run
        ("release_holds", "spend_holds_once"),  # a call's holds, never the history's
        ("release_idle_holds", "spend_holds_held"),
    ],
)
async def test_lookups_on_every_step_use_their_index(db: Path, query: str, index: str) -> None:
    await migrate(db)
    sql = queries.load("sqlite")[query]
    with sqlite3.connect(db) as conn:
        params = dict.fromkeys(re.findall(r":([a-z_]+)", sql))
        plan = " ".join(row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params))
    conn.close()
    assert f"INDEX {index}" in plan
    assert "SCAN effects" not in plan
    assert "SCAN spend_" not in plan
    assert "SCAN approvals" not in plan
    assert "SCAN checkpoints" not in plan


async def test_a_limits_window_is_read_by_its_key_and_buckets(db: Path) -> None:
    """Reading a limit sums the buckets of one key by the primary key, never a scan."""
    await migrate(db)
    sql = queries.load("sqlite")["spend_used_many"]
    with sqlite3.connect(db) as conn:
        params = dict.fromkeys(re.findall(r":([a-z_]+)", sql))
        plan = " ".join(row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params))
    conn.close()
    assert "SEARCH s USING PRIMARY KEY (counter=? AND key=? AND bucket>? AND bucket<?)" in plan, (
        plan
    )


async def test_every_sqlite_query_compiles_against_the_migrated_schema(db: Path) -> None:
    await migrate(db)

    with sqlite3.connect(db) as conn:
        for name, sql in queries.load("sqlite").items():
            if not sql:
                continue
            params = dict.fromkeys(re.findall(r":([a-z_]+)", sql))
            try:
                conn.execute(f"EXPLAIN {sql}", params)
            except sqlite3.Error as exc:
                pytest.fail(f"query {name!r} does not compile: {exc}")
    conn.close()
