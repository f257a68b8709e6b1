"""A transaction body's vocabulary: the statements it yields, and how a driver runs it.

A body is a generator: it yields `Stmt`s (a query's name, its parameters, what to fetch)
and receives each one's result; what it returns is the write's result, what it raises
aborts the transaction (`store.core` holds the bodies).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any
from typing import Literal
from typing import TypeVar

T = TypeVar("T")
Fetch = Literal["all", "one", "count", "none", "many"]


@dataclass(frozen=True, slots=True)
class Stmt:
    """One statement: `fetch` says what the body receives back (rows, a row or None, the
    number of rows changed, nothing; `many` runs it once per parameter set in `params`).

    `alone`: the statement may commit on its own when it is the first its dialect runs in the
    body (the body's statements before it are empty there) and the body runs no other after
    it, which the body promises: nothing it does after this statement writes or refuses what
    the statement wrote. A backend with round trips to save (PostgreSQL) then sends it
    without BEGIN and COMMIT; SQLite's writer runs every body in its transaction anyway."""

    name: str
    params: Any
    fetch: Fetch = "none"
    alone: bool = False


Body = Generator[Stmt, Any, T]
MakeBody = Callable[[], Body[T]]


def drive(body: Body[T], execute: Callable[[Stmt], Any]) -> T:
    """Run a body to its end with a synchronous `execute` (the SQLite writer's)."""
    try:
        stmt = next(body)
        while True:
            stmt = body.send(execute(stmt))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
