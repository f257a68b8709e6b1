"""The one query file: rendered per dialect, and refused whole at load time when a query
could not run on every dialect (an unknown placeholder, a query one dialect lacks)."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from support.helpers import run_text

from store import queries
from store.queries import QueryFileError
from store.queries import compile_file


def one(body: str, name: str = "q") -> str:
    return f"-- {name} --\n-- What it does.\n{body}\n"


def test_a_shared_query_renders_its_placeholders_and_casts_per_dialect() -> None:
    text = one(
        "SELECT * FROM runs {indexed_by(runs_by_status)}\n"
        "WHERE (:status::text IS NULL OR status = :status) AND dry_run = {true}\n"
        "  AND lease_expires_at < {seconds_from_now(:ttl)} {for_update}"
    )

    compiled = compile_file(text)

    assert compiled["sqlite"]["q"] == (
        "SELECT * FROM runs INDEXED BY runs_by_status\n"
        "WHERE (:status IS NULL OR status = :status) AND dry_run = 1\n"
        "  AND lease_expires_at < (julianday('now') - 2440587.5) * 86400.0 + :ttl "
    )
    assert compiled["postgres"]["q"] == (
        "SELECT * FROM runs \n"
        "WHERE (:status::text IS NULL OR status = :status) AND dry_run = true\n"
        "  AND lease_expires_at < now() + make_interval(secs => :ttl) FOR UPDATE"
    )


def test_a_dialects_own_body_takes_the_place_of_the_shared_one() -> None:
    text = (
        one("SELECT 1", "a")
        + "\n-- b [sqlite] --\n-- SQLite's.\nSELECT 'sqlite'\n"
        + "\n-- b [postgres] --\n-- PostgreSQL's.\nSELECT 'postgres'\n"
        + "\n-- c --\n-- Shared.\nSELECT 'shared'\n"
        + "\n-- c [postgres] --\n-- PostgreSQL's own.\nSELECT 'own'\n"
    )

    compiled = compile_file(text)

    assert compiled["sqlite"] == {"a": "SELECT 1", "b": "SELECT 'sqlite'", "c": "SELECT 'shared'"}
    assert compiled["postgres"] == {"a": "SELECT 1", "b": "SELECT 'postgres'", "c": "SELECT 'own'"}


def test_json_literals_are_not_placeholders() -> None:
    compiled = compile_file(one("SELECT '{}', '{\"a\": 1}'"))

    assert compiled["sqlite"]["q"] == compiled["postgres"]["q"] == "SELECT '{}', '{\"a\": 1}'"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (one("SELECT {nowish}"), r"unknown placeholder \{nowish\}"),
        (one("SELECT {indexed_by}"), r"\{indexed_by\} takes 1 argument"),
        (one("SELECT {now(:x)}"), r"\{now\(:x\)\} takes 0 argument"),
        (one("SELECT {json_text(a.b(c), d)}"), "malformed placeholder"),
        ("-- q [sqlite] --\n-- Only SQLite's.\nSELECT 1\n", "'q' is missing for postgres"),
        ("-- q [mysql] --\n-- Another dialect.\nSELECT 1\n", "unknown dialect 'mysql'"),
        (one("SELECT 1") + one("SELECT 2"), "'q' is defined twice"),
        ("-- q --\nSELECT 1\n", "no `-- description`"),
        (one("SELECT x::int"), "a cast SQLite cannot read"),
        (
            one("SELECT 1")
            + "-- q [sqlite] --\n-- S.\nSELECT 2\n-- q [postgres] --\n-- P.\nSELECT 3\n",
            "shared body no dialect uses",
        ),
        ("SELECT 1;\n" + one("SELECT 2"), "SQL before the first query"),
    ],
)
def test_a_query_file_not_every_dialect_can_run_is_refused(text: str, message: str) -> None:
    with pytest.raises(QueryFileError, match=message):
        compile_file(text)


def test_the_checked_in_file_renders_for_every_dialect_with_nothing_left_over() -> None:
    for dialect in queries.DIALECTS:
        for name, sql in queries.load(dialect).items():
            assert not re.search(r"\{[a-z_]", sql), (dialect, name)
            if dialect == "sqlite":
                assert "::" not in re.sub(r"'[^']*'", "''", sql), name


def test_an_unknown_dialect_is_refused() -> None:
    with pytest.raises(QueryFileError, match="no queries for dialect 'oracle'"):
        queries.load("oracle")


def test_the_store_does_not_open_with_a_broken_query_file(tmp_path: Path) -> None:
    """A real process opens a store from a copy of the package whose query file names an
    unknown placeholder: it fails at start-up, naming the query, and creates no database."""
    copy = tmp_path / "store"
    shutil.copytree(
        Path(queries.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__")
    )
    query_file = copy / "sql" / "queries.sql"
    query_file.write_text(query_file.read_text("utf-8").replace("{now}", "{nwo}", 1), "utf-8")
    database = tmp_path / "signoff.db"
    script = (
        "import asyncio, store\n"
        f"assert store.__file__.startswith({str(copy)!r}), store.__file__\n"
        "async def main() -> None:\n"
        f"    await store.open_store('sqlite:///{database}')\n"
        "asyncio.run(main())\n"
    )
    done = run_text(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )

    assert done.returncode != 0, done.stdout
    assert "QueryFileError" in done.stderr, done.stderr
    assert "uses an unknown placeholder {nwo}" in done.stderr, done.stderr
    assert not database.exists()
