"""Numbered schema migrations: `migrations/<dialect>/NNNN_<what>.sql`, applied in order.

Each file's first line says whether the migration is safe while workers of the schema before
it still run (docs/operations.md, "Upgrades"):

    -- While older workers run: safe. <why>
    -- While older workers run: unsafe. <what older code would misread>

Safe: older code reads and writes correctly alongside it (it adds what older code does not
look at, and records read unknown columns as absent); such a worker steps aside when it sees
the newer schema, handing its runs back. Unsafe: older code would misread it, so it is
applied only while no older worker holds a lease, or when told to stop the world.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

from store import errors

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_SAFETY = re.compile(r"\A-- While older workers run: (safe|unsafe)\. (\S.*)$", re.MULTILINE)
SAFETY_LINE = "-- While older workers run: safe. <why>  (or: unsafe. <what older code misreads>)"


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str
    safe: bool
    """Whether workers of the schema before it may run on while it is applied."""
    why: str

    @property
    def label(self) -> str:
        return f"{self.version:04d} {self.name}"


@dataclass(frozen=True, slots=True)
class LeaseHolder:
    """A worker holding live leases, with the schema it said it runs when it took them (None:
    a Signoff from before workers said so, which cannot step aside)."""

    worker: str
    schema: int | None
    runs: int

    def __str__(self) -> str:
        runs = f"{self.runs} run{'s' if self.runs != 1 else ''}"
        if self.schema is None:
            return f"{self.worker} ({runs}; a Signoff that cannot step aside: stop it)"
        return f"{self.worker} (schema {self.schema}, {runs})"


def parse(version: int, name: str, sql: str) -> Migration:
    """A migration from its file; `ValueError` if its first line does not say its safety."""
    match = _SAFETY.match(sql)
    if match is None:
        raise ValueError(
            f"migration {version:04d}_{name} must say on its first line whether it is safe "
            f"while older workers run: {SAFETY_LINE}"
        )
    return Migration(version, name, sql, match[1] == "safe", match[2].strip())


@cache
def migrations(dialect: str) -> tuple[Migration, ...]:
    found = []
    for entry in (files("store") / "migrations" / dialect).iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(parse(int(match[1]), match[2], entry.read_text("utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise ValueError(f"{dialect} migrations are not numbered 1..n: {versions}")
    return tuple(found)


def latest_version(dialect: str) -> int:
    return len(migrations(dialect))


def pending(dialect: str, current: int) -> tuple[Migration, ...]:
    return tuple(m for m in migrations(dialect) if m.version > current)


def applied(dialect: str, before: int, after: int) -> tuple[Migration, ...]:
    """The migrations that took a database from `before` to `after`."""
    return tuple(m for m in migrations(dialect) if before < m.version <= after)


def in_the_way(steps: Sequence[Migration], holders: Iterable[LeaseHolder]) -> list[LeaseHolder]:
    """The lease holders these migrations may not run beside: every one that cannot step
    aside (it would misread any new schema), and every one whose schema is older than an
    unsafe migration among them."""
    if not steps:
        return []
    unsafe = [m.version for m in steps if not m.safe]
    return [
        holder
        for holder in holders
        if holder.schema is None or (unsafe and holder.schema < max(unsafe))
    ]


def refuse_in_the_way(steps: Sequence[Migration], blocking: Sequence[LeaseHolder]) -> None:
    """Raise `UnsafeMigration`, before anything is migrated, naming the workers in the way."""
    if not blocking:
        return
    unsafe = [m.label for m in steps if not m.safe]
    why = (
        f"migration {', '.join(unsafe)} is not safe while older workers run"
        if unsafe
        else f"workers that cannot step aside would misread migration {steps[0].label}"
    )
    raise errors.UnsafeMigration(
        f"{why}, and these workers hold leases: {'; '.join(map(str, blocking))}. Stop them "
        "(a stopping worker hands its runs back) and migrate again, or migrate with "
        "--stop-the-world, which takes their leases (their next writes are refused)",
        workers=[str(holder) for holder in blocking],
        migrations=[m.label for m in steps],
    )


def schema_problem(version: int, known: int) -> str | None:
    """What is wrong with a database at schema `version` for a Signoff that knows `known`."""
    if version > known:
        return (
            f"the database is at schema {version}, newer than this worker's Signoff knows "
            f"({known}): replace this worker with the newer Signoff"
        )
    if version < known:
        return f"schema version {version}, not {known}: run `signoff db migrate`"
    return None


def refuse_newer(dialect: str, version: int, database: str) -> None:
    """Raise `SchemaTooNew`, before anything is written, if `database` (how the message names
    it) has a schema version newer than this Signoff's migrations go."""
    latest = latest_version(dialect)
    if version > latest:
        raise errors.SchemaTooNew(
            f"{database} has schema version {version}, newer than this Signoff "
            f"understands ({latest}); upgrade Signoff",
            found=version,
            supported=latest,
        )
