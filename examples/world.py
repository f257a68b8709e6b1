"""The outside world the example agents act on: orders, a payment provider and a mailbox.

It lives in its own SQLite file, apart from Signoff's store, the way Stripe or an e-mail
provider would: Signoff cannot see into it or roll it back. Like Stripe, the payment provider
honours idempotency keys: a repeated request with the same key and the same parameters returns
the first result, and the same key with other parameters is an error (`KeyReused`), never the
first request's receipt. The mailbox does not dedupe, which is why an e-mail whose fate is
unknown must go to a human.

A provider that knows Signoff's public keys (`SIGNOFF_WORLD_JWKS`: a JWKS file saved from
`/v1/keys`, or that URL) pays a refund only with a Signoff receipt approving exactly that
refund: its arguments and its idempotency key (`ReceiptRefused` otherwise).
"""

from __future__ import annotations

import json
import os
import sqlite3
import zlib
from collections.abc import Mapping
from contextlib import closing
from pathlib import Path
from typing import Any

from signoff import receipts

DEFAULT_PATH = "signoff-world.db"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS payments (
    idempotency_key TEXT PRIMARY KEY,
    kind            TEXT NOT NULL,
    reference       TEXT NOT NULL,
    amount_cents    INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS emails (
    id              INTEGER PRIMARY KEY,
    idempotency_key TEXT NOT NULL,
    recipient       TEXT NOT NULL,
    subject         TEXT NOT NULL
);
"""


def path() -> str:
    return os.environ.get("SIGNOFF_WORLD_DB", DEFAULT_PATH)


def _connect() -> sqlite3.Connection:
    conn = sqlite3.connect(path(), timeout=30, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.executescript(_SCHEMA)
    return conn


def order(order_id: str) -> dict[str, Any]:
    """An order, made up deterministically from its id."""
    digest = zlib.crc32(order_id.encode())
    return {
        "order_id": order_id,
        "amount_cents": 1000 + digest % 9000,
        "customer_email": f"customer-{order_id}@example.com",
        "invoice_id": f"INV-{order_id}",
        "restocking_fee_cents": 500 if digest % 2 else 0,
    }


class ReceiptRefused(PermissionError):
    """The provider refuses a payment its receipt does not approve."""


def trusted_keys() -> dict[str, Any] | None:
    """Signoff's public keys, when this provider was told them."""
    where = os.environ.get("SIGNOFF_WORLD_JWKS")
    if not where:
        return None
    if where.startswith(("http://", "https://")):
        return receipts.fetch_keys(where)
    keys: dict[str, Any] = json.loads(Path(where).read_text("utf-8"))
    return keys


def check_receipt(
    receipt: Mapping[str, Any] | None, args: Mapping[str, Any], idempotency_key: str
) -> None:
    """Refuse the payment unless Signoff's receipt approves these arguments under this key
    (nothing to check for a provider that was not told Signoff's keys)."""
    keys = trusted_keys()
    if keys is None:
        return
    if receipt is None:
        raise ReceiptRefused("no Signoff receipt came with the request")
    try:
        receipts.verify(receipt, keys, args=args, idempotency_key=idempotency_key)
    except receipts.BadReceipt as exc:
        raise ReceiptRefused(f"the Signoff receipt does not approve this payment: {exc}") from None


class KeyReused(ValueError):
    """The payment provider refuses a key it saw with other parameters."""


def pay(kind: str, reference: str, amount_cents: int, idempotency_key: str) -> dict[str, Any]:
    """A payment-provider call: a refund, a refund reversal or a charge, once per key."""
    with closing(_connect()) as conn:
        conn.execute(
            "INSERT INTO payments VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (idempotency_key, kind, reference, amount_cents),
        )
        row = conn.execute(
            "SELECT kind, reference, amount_cents FROM payments WHERE idempotency_key = ?",
            (idempotency_key,),
        ).fetchone()
    if tuple(row) != (kind, reference, amount_cents):
        raise KeyReused(
            f"idempotency key {idempotency_key!r} was used for {row[0]} {row[1]} {row[2]}; "
            f"this request is {kind} {reference} {amount_cents}"
        )
    return {
        "id": f"{row[0]}_{idempotency_key[-8:]}",
        "kind": row[0],
        "reference": row[1],
        "amount_cents": row[2],
    }


def reversals(reference: str) -> int:
    """How many refunds of this order were reversed (each makes room for a new refund)."""
    with closing(_connect()) as conn:
        row = conn.execute(
            "SELECT count(*) FROM payments WHERE kind = 'refund_reversal' AND reference = ?",
            (reference,),
        ).fetchone()
    return int(row[0])


def send(recipient: str, subject: str, idempotency_key: str) -> dict[str, Any]:
    """Send an e-mail. Sending twice sends twice."""
    with closing(_connect()) as conn:
        cursor = conn.execute(
            "INSERT INTO emails (idempotency_key, recipient, subject) VALUES (?, ?, ?)",
            (idempotency_key, recipient, subject),
        )
        return {"message_id": f"msg_{cursor.lastrowid}", "to": recipient}


def payments() -> list[tuple[str, str, int, str]]:
    """(kind, reference, amount, key) for every payment, for tests and the demo."""
    with closing(_connect()) as conn:
        return conn.execute(
            "SELECT kind, reference, amount_cents, idempotency_key FROM payments ORDER BY rowid"
        ).fetchall()


def emails() -> list[tuple[str, str, str]]:
    """(recipient, subject, key) for every e-mail sent."""
    with closing(_connect()) as conn:
        return conn.execute(
            "SELECT recipient, subject, idempotency_key FROM emails ORDER BY id"
        ).fetchall()
