"""Numbered migrations build the expected schema, once; a newer database is refused untouched.

Also checks the named SQL files: they parse, every name the backend uses exists, and every
dialect under `store/sql` defines the same names.
"""

from __future__ import annotations

import ast
import hashlib
import re
import sqlite3
import time
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path

import pytest

from store import errors, migration, open_store, queries
from store.sqlite import SqliteStore

STORE = files("store")
SQL_DIALECTS = sorted(p.name for p in (STORE / "sql").iterdir() if p.is_dir())
MIGRATION_DIALECTS = sorted(p.name for p in (STORE / "migrations").iterdir() if p.is_dir())
BACKEND_DIALECTS = [
    d
    for d in SQL_DIALECTS
    if (STORE / f"{d}.py").is_file() or (STORE / d / "__init__.py").is_file()
]
SHARED_SOURCES = ("core.py", "sql_store.py", "learned.py")
"""The write logic and the Store methods every SQL backend runs (named queries, no SQL)."""
NO_OP = "-- (None: "
"""How a query file says a statement its dialect has no need of (a row lock) is empty."""

# The schema after every migration, as SQLite reports it. A new migration updates this.
EXPECTED_SCHEMA: dict[str, list[str]] = {
    "approval_votes": [
        "approval_id TEXT NOT NULL PRIMARY KEY 1",
        "user_id TEXT NOT NULL PRIMARY KEY 2",
        "at REAL NOT NULL",
        "FOREIGN KEY (approval_id) REFERENCES approvals (id) ON DELETE CASCADE",
        "TRIGGER outbox_approval_voted",
    ],
    "approvals": [
        "id TEXT PRIMARY KEY",
        "run_id TEXT",
        "call_id TEXT",
        "lineage_id TEXT",
        "idempotency_key TEXT",
        "tool TEXT NOT NULL",
        "args TEXT NOT NULL",
        "approved_args TEXT",
        "policy TEXT NOT NULL",
        "state TEXT NOT NULL",
        "decided_by TEXT",
        "decided_at REAL",
        "reason TEXT",
        "requested_by TEXT",
        "required_approvals INTEGER NOT NULL",
        "deadline REAL",
        "next_reminder_at REAL",
        "reminders_sent INTEGER NOT NULL",
        "escalated INTEGER NOT NULL",
        "channel TEXT",
        "message_ts TEXT",
        "delivery TEXT NOT NULL",
        "callback_url TEXT",
        "callback_status TEXT",
        "created_at REAL NOT NULL",
        "duplicate_of TEXT",
        "rule TEXT",
        "sensitive TEXT NOT NULL DEFAULT '[]'",
        "args_digest TEXT",
        "approved_digest TEXT",
        "key_suffix TEXT",
        "conflict TEXT",
        "duplicate_args TEXT",
        "resume_state TEXT",
        "FOREIGN KEY (run_id) REFERENCES runs (id) ON DELETE CASCADE",
        "INDEX approvals_by_idempotency_key (idempotency_key, created_at)"
        " WHERE idempotency_key IS NOT NULL",
        "INDEX approvals_by_key (lineage_id, idempotency_key)",
        "INDEX approvals_by_learned_rule (<expression>) WHERE rule IS NOT NULL",
        "INDEX approvals_by_run (run_id)",
        "INDEX approvals_by_state (state, created_at)",
        "INDEX approvals_pending_deadline (deadline) WHERE state = 'pending'",
        "INDEX approvals_pending_reminder (next_reminder_at) WHERE state = 'pending'",
        "TRIGGER audit_approval_escalated",
        "TRIGGER audit_approval_requested",
        "TRIGGER outbox_approval_decided",
        "TRIGGER outbox_approval_reminded",
        "TRIGGER outbox_approval_requested",
    ],
    "audit_events": [
        "id INTEGER PRIMARY KEY",
        "at REAL NOT NULL",
        "actor TEXT NOT NULL",
        "action TEXT NOT NULL",
        "run_id TEXT",
        "approval_id TEXT",
        "detail TEXT NOT NULL",
        "INDEX audit_events_by_approval (approval_id, id)",
        "INDEX audit_events_by_run (run_id, id)",
        "INDEX audit_events_by_time (at, id)",
        "INDEX audit_events_undo_started (run_id, id) WHERE action = 'undo_started'",
        "INDEX audit_requests_by_tool (<expression>, id) WHERE action IN "
        "('approval_requested', 'approval_auto_approved', 'approval_denied')",
        "TRIGGER audit_events_append_only",
    ],
    "checkpoints": [
        "run_id TEXT NOT NULL PRIMARY KEY 1",
        "seq INTEGER NOT NULL PRIMARY KEY 2",
        "step INTEGER NOT NULL",
        "snapshot INTEGER NOT NULL",
        "status TEXT NOT NULL",
        "steps INTEGER NOT NULL",
        "input_tokens INTEGER NOT NULL",
        "output_tokens INTEGER NOT NULL",
        "cost REAL NOT NULL",
        "stop_reason TEXT",
        "error TEXT",
        "created_at REAL NOT NULL",
        "messages TEXT NOT NULL",
        "cached_input_tokens INTEGER NOT NULL DEFAULT 0",
        "FOREIGN KEY (run_id) REFERENCES runs (id) ON DELETE CASCADE",
        "INDEX checkpoints_by_step (run_id, step, seq)",
        "INDEX checkpoints_snapshots (run_id, seq) WHERE snapshot = 1",
    ],
    "effects": [
        "id INTEGER PRIMARY KEY",
        "run_id TEXT NOT NULL",
        "call_id TEXT NOT NULL",
        "lineage_id TEXT NOT NULL",
        "step INTEGER NOT NULL",
        "tool TEXT NOT NULL",
        "reversibility TEXT NOT NULL",
        "compensator TEXT",
        "idempotency_key TEXT NOT NULL",
        "idempotent INTEGER NOT NULL",
        "status TEXT NOT NULL",
        "approval_id TEXT",
        "compensates TEXT",
        "compensated_by TEXT",
        "started_at REAL NOT NULL",
        "finished_at REAL",
        "error TEXT",
        "args TEXT NOT NULL",
        "result TEXT",
        "sensitive TEXT NOT NULL DEFAULT '[]'",
        "args_digest TEXT",
        "asked_digest TEXT",
        "FOREIGN KEY (run_id) REFERENCES runs (id) ON DELETE CASCADE",
        "INDEX effects_by_key (lineage_id, idempotency_key) WHERE reversibility <> 'read'",
        "INDEX effects_by_key_alone (idempotency_key) WHERE reversibility <> 'read'",
        "INDEX effects_in_doubt (run_id) WHERE status = 'in_doubt'",
        "UNIQUE (run_id, call_id)",
        "TRIGGER audit_effect_ended",
    ],
    "facts": [
        "key TEXT PRIMARY KEY",
        "value TEXT NOT NULL",
        "source TEXT NOT NULL",
        "updated_at REAL NOT NULL",
        "INDEX facts_by_source (source)",
    ],
    "outbox": [
        "id INTEGER PRIMARY KEY",
        "topic TEXT NOT NULL",
        "subject_id TEXT NOT NULL",
        "detail TEXT NOT NULL DEFAULT '{}'",
        "created_at REAL NOT NULL",
        "attempts INTEGER NOT NULL DEFAULT 0",
        "next_attempt_at REAL NOT NULL",
        "claimed_by TEXT",
        "claimed_until REAL",
        "sent_at REAL",
        "error TEXT",
        "INDEX outbox_by_subject (subject_id, created_at)",
        "INDEX outbox_unsent_by_subject (subject_id, id) WHERE sent_at IS NULL",
        "INDEX outbox_unsent_due (next_attempt_at) WHERE sent_at IS NULL",
    ],
    "pages": [
        "id TEXT PRIMARY KEY",
        "run_id TEXT",
        "call_id TEXT",
        "tool TEXT",
        "reason TEXT NOT NULL",
        "detail TEXT NOT NULL",
        "channel TEXT",
        "message_ts TEXT",
        "delivery TEXT NOT NULL",
        "acknowledged_by TEXT",
        "acknowledged_at REAL",
        "created_at REAL NOT NULL",
        "FOREIGN KEY (run_id) REFERENCES runs (id) ON DELETE CASCADE",
        "INDEX pages_by_run (run_id)",
        "INDEX pages_open (created_at) WHERE acknowledged_by IS NULL",
        "TRIGGER audit_page_opened",
        "TRIGGER outbox_page_acknowledged",
        "TRIGGER outbox_page_opened",
    ],
    "runs": [
        "id TEXT PRIMARY KEY",
        "agent TEXT NOT NULL",
        "task TEXT NOT NULL",
        "status TEXT NOT NULL",
        "budget TEXT NOT NULL",
        "requested_by TEXT",
        "lineage_id TEXT NOT NULL",
        "parent_id TEXT",
        "fork_step INTEGER",
        "dry_run INTEGER NOT NULL",
        "lease_owner TEXT",
        "lease_expires_at REAL",
        "created_at REAL NOT NULL",
        "updated_at REAL NOT NULL",
        "model TEXT",
        "lease_epoch INTEGER NOT NULL DEFAULT 0",
        "INDEX runs_by_status (status, created_at)",
        "TRIGGER outbox_run_finished",
    ],
    "learned_rules": [
        "id TEXT PRIMARY KEY",
        "tool TEXT NOT NULL",
        "condition TEXT NOT NULL",
        "author TEXT NOT NULL",
        "reason TEXT NOT NULL",
        "state TEXT NOT NULL",
        "needs_second INTEGER NOT NULL DEFAULT 0",
        "from_approval TEXT",
        "created_at REAL NOT NULL",
        "expires_at REAL NOT NULL",
        "confirmed_by TEXT",
        "confirmed_at REAL",
        "revoked_by TEXT",
        "revoked_at REAL",
        "reminded_at REAL",
        "noted_until REAL",
        "INDEX learned_rules_by_tool (tool, state)",
    ],
    "signoff_schema": [
        "version INTEGER PRIMARY KEY",
        "name TEXT NOT NULL",
        "applied_at REAL NOT NULL",
    ],
}


# reading a schema back


def describe(conn: sqlite3.Connection) -> dict[str, list[str]]:
    """Every table of the database: columns, foreign keys, indexes, unique constraints and
    the triggers that fire on it."""
    tables = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    ).fetchall()
    return {
        name: [*_columns(conn, name), *_keys(conn, name), *_triggers(conn, name)]
        for (name,) in sorted(tables)
    }


def _triggers(conn: sqlite3.Connection, table: str) -> Iterator[str]:
    found = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ? ORDER BY name",
        (table,),
    )
    for (name,) in found:
        yield f"TRIGGER {name}"


def _columns(conn: sqlite3.Connection, table: str) -> Iterator[str]:
    info = conn.execute(f"PRAGMA table_info({table})").fetchall()
    composite = sum(1 for column in info if column[5]) > 1
    for _, name, type_, notnull, default, pk in info:
        text = f"{name} {type_}" + (" NOT NULL" if notnull else "")
        text += f" DEFAULT {default}" if default is not None else ""
        text += (f" PRIMARY KEY {pk}" if composite else " PRIMARY KEY") if pk else ""
        yield text


def _keys(conn: sqlite3.Connection, table: str) -> Iterator[str]:
    for row in conn.execute(f"PRAGMA foreign_key_list({table})"):
        ref, column, ref_column, on_delete = row[2], row[3], row[4], row[6]
        yield f"FOREIGN KEY ({column}) REFERENCES {ref} ({ref_column}) ON DELETE {on_delete}"
    indexes = conn.execute(f"PRAGMA index_list({table})").fetchall()
    for _, index, unique, origin, _partial in sorted(indexes, key=lambda i: i[1]):
        columns = ", ".join(
            c[2] or "<expression>" for c in conn.execute(f"PRAGMA index_info({index})")
        )
        if origin == "u":
            yield f"UNIQUE ({columns})"
        elif origin == "c":
            sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (index,)).fetchone()
            where = re.search(r"\bWHERE\b(.*)$", sql[0], re.DOTALL)
            text = f"{'UNIQUE ' if unique else ''}INDEX {index} ({columns})"
            yield text + (" WHERE " + " ".join(where[1].split()) if where else "")


def applied(path: Path) -> list[tuple[int, str, float]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT version, name, applied_at FROM signoff_schema ORDER BY 1")
        return rows.fetchall()


def schema_of(path: Path) -> dict[str, list[str]]:
    conn = sqlite3.connect(path)
    try:
        return describe(conn)
    finally:
        conn.close()


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

    assert schema_of(db) == EXPECTED_SCHEMA
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

    assert schema_of(db) == {}


async def test_migrate_reports_the_versions_it_went_between(db: Path) -> None:
    store = await SqliteStore(str(db)).open(migrate=False)
    try:
        assert await store.migrate() == (0, migration.latest_version("sqlite"))
    finally:
        await store.close()

    assert schema_of(db) == EXPECTED_SCHEMA


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
    assert schema_of(db) == EXPECTED_SCHEMA


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
        (folder / name).write_text("SELECT 1;")
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


@pytest.mark.parametrize("dialect", SQL_DIALECTS)
def test_the_query_file_parses_with_a_description_per_query(dialect: str) -> None:
    text = (STORE / "sql" / dialect / "queries.sql").read_text("utf-8")
    headers = re.findall(r"^-- ([a-z0-9_]+) --\n(.*)$", text, re.MULTILINE)

    loaded = queries.load(dialect)

    assert [name for name, _ in headers] == list(loaded)
    assert all(line.startswith("-- ") and len(line) > 4 for _, line in headers), headers
    no_ops = {name for name, line in headers if line.startswith(NO_OP)}
    assert all(loaded[name] for name in loaded if name not in no_ops), [
        name for name, body in loaded.items() if not body and name not in no_ops
    ]
    assert not any(loaded[name] for name in no_ops), no_ops


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


def test_a_query_name_defined_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="twice"):
        queries.parse("-- a --\n-- one.\nSELECT 1\n\n-- a --\n-- again.\nSELECT 2\n")


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
    assert "SCAN approvals" not in plan
    assert "SCAN checkpoints" not in plan


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
