"""The PostgreSQL dialect's named queries, with `:name` parameters turned into `$n`.

The one query file (`store.queries`) names its parameters `:name` for every dialect, so
every backend is handed the same parameter dicts; here each query keeps the order its `$n`
take them in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from store import queries

# `:name`, but not the second colon of a `::type` cast.
_PARAM = re.compile(r"(?<![:\w]):([a-z_][a-z0-9_]*)")


@dataclass(frozen=True, slots=True)
class Query:
    sql: str
    names: tuple[str, ...]

    @property
    def unsynced(self) -> bool:
        """Whether the statement's transaction commits without waiting for the disk by
        itself (`{unsynced}`), so it may be sent alone where that is wanted."""
        return "set_config('synchronous_commit', 'off', true)" in self.sql

    def args(self, params: dict[str, Any]) -> list[Any]:
        return [params[name] for name in self.names]


def compile_query(text: str) -> Query:
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        if match[1] not in names:
            names.append(match[1])
        return f"${names.index(match[1]) + 1}"

    return Query(_PARAM.sub(number, text), tuple(names))


@cache
def load() -> dict[str, Query]:
    return {name: compile_query(text) for name, text in queries.load("postgres").items()}
