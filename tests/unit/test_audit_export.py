"""The audit export's records: JSON Lines that parse back to the events, CSV whose cells a
spreadsheet cannot run as formulas, and `--since` as an age or a time."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC
from datetime import datetime
from datetime import timedelta

from bot.audit_export import csv_lines
from bot.audit_export import jsonl
from bot.audit_export import since_instant
from store import AuditEvent

AT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
EVENTS = [
    AuditEvent(
        id=1,
        action="approval_requested",
        actor="U0REQ",
        run_id="r1",
        approval_id="ap_1",
        detail={"args": {"note": "line\nbreak \x1b[2J"}},
        at=AT,
    ),
    AuditEvent(
        id=2,
        action="approval_approved",
        actor='=HYPERLINK("http://x")',
        run_id="r1",
        detail={"reason": "+1"},
        at=AT + timedelta(seconds=1),
    ),
]


def test_jsonl_is_one_parseable_line_per_event() -> None:
    lines = list(jsonl(EVENTS))
    assert all(line.endswith("\n") and line.count("\n") == 1 for line in lines)
    first = json.loads(lines[0])
    assert first == {
        "id": 1,
        "at": "2026-11-30T12:00:00+00:00",
        "action": "approval_requested",
        "actor": "U0REQ",
        "run_id": "r1",
        "approval_id": "ap_1",
        "detail": {"args": {"note": "line\nbreak \x1b[2J"}},
        "prev_hash": None,
        "hash": None,
    }
    assert "\x1b" not in lines[0]


def test_csv_cells_cannot_run_as_formulas() -> None:
    rows = list(csv.reader(io.StringIO("".join(csv_lines(EVENTS)))))
    header = ["id", "at", "action", "actor", "run_id", "approval_id", "detail"]
    assert rows[0] == [*header, "prev_hash", "hash"]
    assert rows[2][3] == '\'=HYPERLINK("http://x")'
    assert rows[2][5] == ""
    assert json.loads(rows[1][6]) == EVENTS[0].detail
    assert list(csv_lines([], header=False)) == []


def test_since_is_an_age_or_a_time() -> None:
    now = AT

    def age(text: str) -> timedelta:
        assert text == "30d"
        return timedelta(days=30)

    assert since_instant("30d", now, age) == now - timedelta(days=30)
    assert since_instant("2026-11-01T00:00", now, age) == datetime(2026, 11, 1, tzinfo=UTC)
