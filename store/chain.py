"""The audit trail's hash chain: each event carries the hash of the one before it (one chain
per database, in commit order), so an event edited, deleted or moved breaks the chain where it
was (docs/operations.md, "A trail that shows tampering").

    hash = sha256(prev_hash + "\\n" + content)    (hex; the first event's prev_hash is GENESIS)

`content` is the canonical text of [at (epoch microseconds), actor, action, run_id,
approval_id, detail]: JSON exactly as PostgreSQL's `jsonb` writes it out (object keys by
length, then bytewise; `", "` and `": "` between items; numbers as decimals without an
exponent; NUL stored the lossless way, `store.postgres.lossless`). PostgreSQL computes it
itself, in the trigger that numbers events at commit (`jsonb_build_array(...)::text`, migration
0023); SQLite's writer computes it here before each commit (`seal`); a verifier computes it
from the events it reads or an export holds, so one definition serves all three.
"""

from __future__ import annotations

import json
import math
import sqlite3
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from decimal import Decimal
from hashlib import sha256
from typing import Any

GENESIS = "0" * 64
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)
ESC = "\uffff"  # as `store.postgres.lossless` stores NUL (that package needs asyncpg)
_STRING = json.JSONEncoder(ensure_ascii=False)


def micros(at: datetime) -> int:
    return (at - EPOCH) // MICROSECOND


def stored_text(text: str) -> str:
    """Text as PostgreSQL holds it (`store.postgres.lossless.text_in`)."""
    if "\x00" not in text and ESC not in text:
        return text
    return text.replace(ESC, ESC + ESC).replace("\x00", ESC + "0")


def content(
    at: datetime,
    actor: str,
    action: str,
    run_id: str | None,
    approval_id: str | None,
    detail: Any,
) -> str:
    return canonical([micros(at), actor, action, run_id, approval_id, detail])


def link(prev_hash: str, text: str) -> str:
    return sha256(f"{prev_hash}\n{text}".encode()).hexdigest()


def canonical(value: Any) -> str:
    """`value` as PostgreSQL's `jsonb` text output writes it."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(canonical(item) for item in value) + "]"
    if isinstance(value, dict):
        keys = [(stored_text(str(k)).encode(), k) for k in value]
        keys.sort(key=lambda pair: (len(pair[0]), pair[0]))
        items = (f"{_quoted(stored.decode())}: {canonical(value[k])}" for stored, k in keys)
        return "{" + ", ".join(items) + "}"
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def _number(value: float) -> str:
    if not math.isfinite(value):
        raise ValueError(f"{value} is not a JSON number")
    if value == 0:
        return "0.0"  # PostgreSQL's numeric has no negative zero
    text = f"{Decimal(repr(value)):f}"
    return text if "." in text else f"{text}.0"


def _string(value: str) -> str:
    return _quoted(stored_text(value))


def _quoted(text: str) -> str:
    # PostgreSQL's escape_json and Python's json (ensure_ascii off) escape alike: the quote,
    # the backslash, \b \f \n \r \t, and other control characters as lowercase \u00xx.
    return _STRING.encode(text)


# SQLite: sealing before each commit


def seal(conn: sqlite3.Connection) -> None:
    """Chain the events this transaction wrote (and any a process without this code wrote
    before it): in id order, which on SQLite's one writer is commit order."""
    unsealed = conn.execute(
        "SELECT id, at, actor, action, run_id, approval_id, detail FROM audit_events "
        "WHERE hash IS NULL ORDER BY id"
    ).fetchall()
    if not unsealed:
        return
    prev = _head(conn)
    for ident, at, actor, action, run_id, approval_id, detail in unsealed:
        when = datetime.fromtimestamp(at, UTC)
        text = content(when, actor, action, run_id, approval_id, _json(detail))
        new = link(prev, text)
        conn.execute(
            "UPDATE audit_events SET prev_hash = ?, hash = ? WHERE id = ?", (prev, new, ident)
        )
        prev = new


def _json(text: str) -> Any:
    return json.loads(text)


def _head(conn: sqlite3.Connection) -> str:
    row = conn.execute(
        "SELECT hash FROM audit_events WHERE hash IS NOT NULL ORDER BY id DESC LIMIT 1"
    ).fetchone()
    if row is not None:
        return str(row[0])
    anchor = conn.execute("SELECT hash FROM audit_anchors ORDER BY seq DESC LIMIT 1").fetchone()
    return GENESIS if anchor is None else str(anchor[0])


def has_chain(conn: sqlite3.Connection) -> bool:
    """Whether the schema has the chain's columns (migration 0023 applied)."""
    found = conn.execute(
        "SELECT count(*) FROM pragma_table_info('audit_events') WHERE name = 'hash'"
    ).fetchone()
    return bool(found[0])
