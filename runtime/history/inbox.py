"""What waits and how runs ended, for surfaces that list them: approvals and runs a page at a
time behind an opaque cursor, and a run's final answer.

A cursor is the (created_at, id) of a page's last record, base64url-encoded JSON: stable
while records are added (a new approval lands after the cursor, a new run before it), and a
cursor that does not decode is a clear error, not the first page again.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Awaitable
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC
from datetime import datetime
from typing import Generic
from typing import TypeVar

from runtime import errors
from runtime.deps import Deps
from store import Approval
from store import Run
from store import RunStatus

T = TypeVar("T", Approval, Run)
MAX_PAGE = 500


@dataclass(frozen=True)
class Listed(Generic[T]):
    """One page of records and the cursor of the next page (None: this is the last)."""

    items: list[T]
    next_cursor: str | None


async def page(
    fetch: Callable[..., Awaitable[list[T]]], cursor: str | None, limit: int
) -> Listed[T]:
    """One page of what `fetch` lists (a store's `page_approvals` or `page_runs`, its filters
    bound): the records after `cursor`, at most `limit` of them."""
    _check_limit(limit)
    found = await fetch(after=decode_cursor(cursor), limit=limit + 1)  # one more: a next page?
    return _listed(found, limit)


async def final_answer(deps: Deps, run: Run) -> str | None:
    """What a finished run answered: its last assistant turn, when that asked for no tool;
    None while it runs or when it ended without one (failed, cancelled, out of budget)."""
    if run.status != RunStatus.DONE:
        return None
    state = await deps.store.load_state(run.id)
    for message in reversed(state.messages):
        if message.role == "assistant":
            return None if message.tool_calls else message.content
    return None


def encode_cursor(created_at: datetime, record_id: str) -> str:
    text = json.dumps([created_at.timestamp(), record_id], separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> tuple[datetime, str] | None:
    if not cursor:
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        at, record_id = json.loads(raw)
        if not isinstance(at, int | float) or not isinstance(record_id, str):
            raise ValueError("not a (time, id) pair")
        return datetime.fromtimestamp(at, UTC), record_id
    except (ValueError, TypeError, binascii.Error, OverflowError, OSError):
        raise errors.InvalidRequest(
            f"cursor: {cursor[:40]!r} is not a cursor this server gave out"
        ) from None


def _check_limit(limit: int) -> None:
    if not 1 <= limit <= MAX_PAGE:
        raise errors.InvalidRequest(f"limit: {limit} is not a number from 1 to {MAX_PAGE}")


def _listed(found: list[T], limit: int) -> Listed[T]:
    items = found[:limit]
    more = len(found) > limit
    last = items[-1] if items else None
    cursor = encode_cursor(last.created_at, last.id) if more and last else None
    return Listed(items, cursor)
