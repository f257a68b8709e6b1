"""Named SQL queries, loaded once per dialect from `sql/<dialect>/queries.sql`.

Each query sits under a `-- name --` line followed by a one-line `-- description`.
"""

from __future__ import annotations

import re
from functools import cache
from importlib.resources import files

_QUERY_HEADER = re.compile(r"^-- ([a-z0-9_]+) --\n(?:-- .*\n)*", re.MULTILINE)


def parse(text: str) -> dict[str, str]:
    parts = _QUERY_HEADER.split(text)
    names, bodies = parts[1::2], parts[2::2]
    queries = {name: body.strip() for name, body in zip(names, bodies, strict=True)}
    if len(queries) != len(names):
        raise ValueError("a query name is defined twice")
    return queries


@cache
def load(dialect: str) -> dict[str, str]:
    return parse((files("store") / "sql" / dialect / "queries.sql").read_text("utf-8"))
