"""Numbered schema migrations: `migrations/<dialect>/NNNN_<what>.sql`, applied in order."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

from store import errors

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


@cache
def migrations(dialect: str) -> tuple[Migration, ...]:
    found = []
    for entry in (files("store") / "migrations" / dialect).iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text("utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise ValueError(f"{dialect} migrations are not numbered 1..n: {versions}")
    return tuple(found)


def latest_version(dialect: str) -> int:
    return len(migrations(dialect))


def pending(dialect: str, current: int) -> tuple[Migration, ...]:
    return tuple(m for m in migrations(dialect) if m.version > current)


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
