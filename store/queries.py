"""Named SQL queries, written once in `sql/queries.sql` and rendered per dialect.

Each query sits under a `-- name --` line followed by a one-line (or longer) `-- description`.
Where the dialects truly differ, a query is written once per dialect instead, under
`-- name [sqlite] --` and `-- name [postgres] --`; a dialect-tagged body takes the place of
the shared one for its dialect. Small differences inside a shared query are placeholders:

- `{now}`: the database's clock, in epoch seconds on SQLite, a `timestamptz` on PostgreSQL;
- `{seconds_from_now(:x)}`: the database's clock plus `:x` seconds;
- `{clock}`: the store's clock: `:test_now` when the store was given a clock of its own,
  else the database's;
- `{seconds_from_clock(:x)}`: the store's clock plus `:x` seconds;
- `{shifted(:at, :base)}`: the store's clock plus how far `:at` is after `:base` (SQLite's
  to whole microseconds, as a time read back and written again is);
- `{true}`, `{false}`: boolean literals (SQLite stores booleans as 1 and 0);
- `{for_update}`: a row lock, which SQLite's single writer has no need of;
- `{skip_locked}`: a row lock that passes over rows another transaction holds (a queue's
  claim), which SQLite's single writer has no need of;
- `{drivable}`: whether a run (a row of `runs`) has something to drive: running, or parked
  with no approval pending and no approved call waiting out its cool-off (by the database's
  clock);
- `{indexed_by(name)}`: SQLite's index hint (PostgreSQL's planner has statistics);
- `{joined_column(table.column)}`: a column of an `UPDATE ... FROM` table in `RETURNING`,
  which SQLite cannot return (NULL there);
- `{json_object}`: the function that builds a JSON object;
- `{json_text(column, key)}`: a JSON object's member as text;
- `{is_distinct_from}`, `{is_not_distinct_from}`: comparisons where NULL equals NULL.
- `{unsynced}`, at the end of a `WHERE`: the statement's transaction commits without
  waiting for the disk (PostgreSQL's `synchronous_commit`, set for that transaction only),
  so a lease write sent alone needs no `SET LOCAL` of its own; SQLite's writer does this
  for the whole batch (nothing here).

A parameter may carry a PostgreSQL cast (`:name::text`), which SQLite's rendering drops.

The whole file is checked when any dialect is first loaded: an unknown placeholder, a
query one dialect lacks, a tag for an unknown dialect or a name defined twice is a
`QueryFileError` at start-up, not a failed statement later.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

DIALECTS = ("sqlite", "postgres")

_SQLITE_NOW = "(julianday('now') - 2440587.5) * 86400.0"
_SQLITE_CLOCK = f"coalesce(:test_now, {_SQLITE_NOW})"
_PG_CLOCK = "coalesce(:test_now::timestamptz, now())"
_DRIVABLE = (
    "(status = 'running' OR (status = 'waiting_approval' AND NOT EXISTS ("
    "SELECT 1 FROM approvals a {indexed} WHERE a.run_id = runs.id AND (a.state = 'pending' "
    "OR (a.cool_off = 'waiting' AND a.cool_off_until > {now})))))"
)
_HEADER = re.compile(r"^-- ([a-z0-9_]+)(?: \[([a-z0-9_]+)\])? --\n((?:-- .*\n)*)", re.MULTILINE)
_PLACEHOLDER = re.compile(r"\{([a-z_]+)(?:\(([^(){}]*)\))?\}")
_OPEN_BRACE = re.compile(r"\{[a-z_]")
_SQLITE_CAST = re.compile(r"(:[a-z_][a-z0-9_]*)::(?:text|bigint|timestamptz|jsonb)\b")


class QueryFileError(ValueError):
    """The query file is not one every dialect can run: fix the file, not the call."""


@dataclass(frozen=True, slots=True)
class Placeholder:
    """How each dialect writes one construct; `{0}`, `{1}`... are the placeholder's arguments."""

    arity: int
    sqlite: str
    postgres: str

    def render(self, dialect: str, args: list[str]) -> str:
        template = self.sqlite if dialect == "sqlite" else self.postgres
        return template.format(*args)


PLACEHOLDERS: dict[str, Placeholder] = {
    "now": Placeholder(0, _SQLITE_NOW, "now()"),
    "seconds_from_now": Placeholder(
        1, f"{_SQLITE_NOW} + {{0}}", "now() + make_interval(secs => {0})"
    ),
    "clock": Placeholder(0, _SQLITE_CLOCK, _PG_CLOCK),
    "seconds_from_clock": Placeholder(
        1, f"{_SQLITE_CLOCK} + {{0}}", f"{_PG_CLOCK} + make_interval(secs => {{0}})"
    ),
    "shifted": Placeholder(
        2,
        f"round(({_SQLITE_CLOCK} + ({{0}} - {{1}})) * 1e6) / 1e6",
        f"{_PG_CLOCK} + ({{0}}::timestamptz - {{1}}::timestamptz)",
    ),
    "true": Placeholder(0, "1", "true"),
    "false": Placeholder(0, "0", "false"),
    "for_update": Placeholder(0, "", "FOR UPDATE"),
    "skip_locked": Placeholder(0, "", "FOR UPDATE SKIP LOCKED"),
    "drivable": Placeholder(
        0,
        _DRIVABLE.format(indexed="INDEXED BY approvals_by_run", now=_SQLITE_NOW),
        _DRIVABLE.format(indexed="", now="now()"),
    ),
    "indexed_by": Placeholder(1, "INDEXED BY {0}", ""),
    "joined_column": Placeholder(1, "NULL", "{0}"),
    "json_object": Placeholder(0, "json_object", "json_build_object"),
    "json_text": Placeholder(2, "json_extract({0}, '$.{1}')", "{0} ->> '{1}'"),
    "unsynced": Placeholder(
        0, "", "AND (SELECT set_config('synchronous_commit', 'off', true)) IS NOT NULL"
    ),
    "is_distinct_from": Placeholder(0, "IS NOT", "IS DISTINCT FROM"),
    "is_not_distinct_from": Placeholder(0, "IS", "IS NOT DISTINCT FROM"),
}


@dataclass(frozen=True, slots=True)
class Entry:
    """One `-- name --` or `-- name [dialect] --` block of the file."""

    name: str
    dialect: str | None
    description: str
    body: str


def parse(text: str) -> list[Entry]:
    parts = _HEADER.split(text)
    if parts[0].strip() and not all(
        line.startswith("--") for line in parts[0].strip().splitlines()
    ):
        raise QueryFileError(f"SQL before the first query's header: {parts[0].strip()[:60]!r}")
    entries = []
    for i in range(1, len(parts), 4):
        name, dialect, description, body = parts[i : i + 4]
        if not description.strip():
            raise QueryFileError(f"query {name!r} has no `-- description` line")
        if dialect is not None and dialect not in DIALECTS:
            raise QueryFileError(f"query {name!r} is tagged for an unknown dialect {dialect!r}")
        entries.append(Entry(name, dialect, description.strip(), body.strip()))
    return entries


def resolve(entries: list[Entry]) -> dict[str, dict[str, str]]:
    """Each dialect's query texts (before rendering): its own body, else the shared one."""
    by_key: dict[tuple[str, str | None], str] = {}
    for entry in entries:
        key = (entry.name, entry.dialect)
        if key in by_key:
            where = "" if entry.dialect is None else f" [{entry.dialect}]"
            raise QueryFileError(f"query {entry.name!r}{where} is defined twice")
        by_key[key] = entry.body
    names = list(dict.fromkeys(entry.name for entry in entries))
    resolved: dict[str, dict[str, str]] = {dialect: {} for dialect in DIALECTS}
    for name in names:
        shared = by_key.get((name, None))
        own = [d for d in DIALECTS if (name, d) in by_key]
        if shared is not None and len(own) == len(DIALECTS):
            raise QueryFileError(f"query {name!r} has a shared body no dialect uses")
        for dialect in DIALECTS:
            body = by_key.get((name, dialect), shared)
            if body is None:
                raise QueryFileError(f"query {name!r} is missing for {dialect}")
            resolved[dialect][name] = body
    return resolved


def render(name: str, body: str, dialect: str) -> str:
    """A query's text for one dialect: placeholders expanded, casts dropped for SQLite."""

    def expand(match: re.Match[str]) -> str:
        placeholder = PLACEHOLDERS.get(match[1])
        if placeholder is None:
            raise QueryFileError(f"query {name!r} uses an unknown placeholder {match[0]}")
        args = [] if match[2] is None else [arg.strip() for arg in match[2].split(",")]
        if len(args) != placeholder.arity:
            raise QueryFileError(
                f"query {name!r}: {match[0]} takes {placeholder.arity} argument(s)"
            )
        return placeholder.render(dialect, args)

    text = _PLACEHOLDER.sub(expand, body)
    if _OPEN_BRACE.search(text):
        raise QueryFileError(f"query {name!r} has a malformed placeholder near {text[:60]!r}")
    if dialect == "sqlite":
        text = _SQLITE_CAST.sub(r"\1", text)
        if "::" in re.sub(r"'[^']*'", "''", text):
            raise QueryFileError(f"query {name!r} has a cast SQLite cannot read")
    return text


def compile_file(text: str) -> dict[str, dict[str, str]]:
    """Every dialect's rendered queries, checked all at once."""
    resolved = resolve(parse(text))
    return {
        dialect: {name: render(name, body, dialect) for name, body in bodies.items()}
        for dialect, bodies in resolved.items()
    }


def source() -> str:
    return (files("store") / "sql" / "queries.sql").read_text("utf-8")


@cache
def _compiled() -> dict[str, dict[str, str]]:
    return compile_file(source())


def load(dialect: str) -> dict[str, str]:
    if dialect not in DIALECTS:
        raise QueryFileError(f"no queries for dialect {dialect!r}; there are {DIALECTS}")
    return _compiled()[dialect]
