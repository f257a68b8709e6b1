"""A migration from the future: the next schema version, as a newer Signoff would add it,
for tests of a worker that finds the database moved past what it knows.

It adds a column to each table a worker reads whole (`SELECT *`), with a default, so every
row read after it has a column this Signoff's records have no field for. `install()` makes
this process know it (a `signoff serve` started with `SIGNOFF_AGENTS` naming a module that
calls it migrates to it at start-up, as a newer release would); `known_with_future` gives
the same to one test.
"""

from __future__ import annotations

from collections.abc import Callable

from store import migration

NAME = "from_the_future"
_SQL = """-- While older workers run: {safety}. A test's migration from the future.
ALTER TABLE approvals ADD COLUMN risk {text} NOT NULL DEFAULT 'low';
ALTER TABLE runs ADD COLUMN priority {integer} NOT NULL DEFAULT 0;
ALTER TABLE effects ADD COLUMN region {text};
ALTER TABLE pages ADD COLUMN team {text};
ALTER TABLE outbox ADD COLUMN channel_hint {text};
"""
_TYPES = {"sqlite": {"text": "TEXT", "integer": "INTEGER"}, "postgres": {}}

Migrations = Callable[[str], tuple[migration.Migration, ...]]


def known_with_future(*, safe: bool, known: Migrations = migration.migrations) -> Migrations:
    """`migration.migrations` with one more: the future's, marked safe or unsafe."""

    def migrations(dialect: str) -> tuple[migration.Migration, ...]:
        found = known(dialect)
        types = {"text": "text", "integer": "integer"} | _TYPES[dialect]
        safety = "safe" if safe else "unsafe"
        sql = _SQL.format(safety=safety, **types)
        return (*found, migration.parse(len(found) + 1, NAME, sql))

    return migrations


def install(*, safe: bool) -> None:
    """Make this whole process a Signoff that knows the future's migration."""
    migration.migrations = known_with_future(safe=safe)  # type: ignore[assignment]
