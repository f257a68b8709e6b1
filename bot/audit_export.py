"""The audit trail as an auditor receives it: one flat record per event, in the order the
events were written, as JSON Lines or CSV, and as a table for people. No I/O here.

Sensitive arguments were masked before the events were written (`store` triggers and the
runtime), so nothing here needs to know which ones they were.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Sequence
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from typing import Any

from rich.table import Table

from bot.requests import instant
from bot.views import inert
from bot.views import when
from runtime.records import AuditEvent

FIELDS = ("id", "at", "action", "actor", "run_id", "approval_id", "detail", "prev_hash", "hash")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""What a spreadsheet would run as a formula at the start of a cell (CSV injection)."""


def record(event: AuditEvent, *, masked: bool = False) -> dict[str, Any]:
    """One event as a flat record: its time in ISO 8601 UTC, its detail as an object, and
    its place in the hash chain (so a copy verifies alone: `signoff audit verify --file`);
    `masked` when what is shown is not what was hashed (a result masked by policy)."""
    found = {
        "id": event.id,
        "at": event.at.astimezone(UTC).isoformat(),
        "action": event.action,
        "actor": event.actor,
        "run_id": event.run_id,
        "approval_id": event.approval_id,
        "detail": event.detail,
        "prev_hash": event.prev_hash,
        "hash": event.hash,
    }
    return found | {"masked": True} if masked else found


def jsonl(events: Iterable[AuditEvent], *, masked: frozenset[int] = frozenset()) -> Iterator[str]:
    """One JSON object per line (ASCII, so control characters stay escaped)."""
    for event in events:
        line = record(event, masked=event.id in masked)
        yield json.dumps(line, ensure_ascii=True, sort_keys=False) + "\n"


def csv_lines(events: Iterable[AuditEvent], *, header: bool = True) -> Iterator[str]:
    """A header (unless continuing), then one row per event; the detail is a JSON cell. A
    cell a spreadsheet would read as a formula is prefixed with `'`."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    if header:
        writer.writerow(FIELDS)
        yield _drain(buffer)
    for event in events:
        row = record(event)
        row["detail"] = json.dumps(row["detail"], ensure_ascii=True)
        writer.writerow([_cell(row[name]) for name in FIELDS])
        yield _drain(buffer)


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_START) else text


def _drain(buffer: io.StringIO) -> str:
    text = buffer.getvalue()
    buffer.seek(0)
    buffer.truncate()
    return text


def audit_table(events: Sequence[AuditEvent]) -> Table:
    table = Table("#", "at (UTC)", "action", "actor", "run", "approval", "detail")
    for event in events:
        table.add_row(
            str(event.id),
            when(event.at),
            inert(event.action),
            inert(event.actor),
            inert(event.run_id or "-"),
            inert(event.approval_id or "-"),
            inert(json.dumps(event.detail, ensure_ascii=False, default=str), 120),
        )
    return table


def since_instant(text: str, now: datetime, parse_age: Any) -> datetime:
    """`--since`: an age (`30d`, `12h`) back from `now`, or an ISO 8601 date and time (UTC
    unless it says otherwise)."""
    try:
        return instant(text)
    except ValueError:
        age: timedelta = parse_age(text)
        return now - age
