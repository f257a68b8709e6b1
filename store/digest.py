"""Canonical arguments and their digest: what binds a key, an approval and an effect to one
call (docs/architecture.md rule 2, "a key is bound to its arguments").

Canonical JSON is stable: keys sorted, no whitespace, numbers as Python writes them, text
as is (not escaped to ASCII). Two calls with the same canonical arguments have the same
digest; any other difference, however small, gives another digest.
"""

from __future__ import annotations

import json
from hashlib import sha256
from typing import Any

_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
)
"""Built once: `json.dumps` with options builds an encoder on every call."""

DIGEST_PREFIX = "sha256:"


def canonical_json(value: Any) -> str:
    return _CANONICAL.encode(value)


def args_digest(args: dict[str, Any]) -> str:
    """The digest of a call's canonical arguments, e.g. `sha256:3f2a…` (71 characters)."""
    return canonical_digest(canonical_json(args))


def canonical_digest(canonical: str) -> str:
    """`args_digest` of arguments whose canonical JSON is already in hand."""
    return DIGEST_PREFIX + sha256(canonical.encode()).hexdigest()


def packed(digest: str | None) -> bytes | None:
    """A digest as the ledger stores it: its 32 raw bytes (None stays None)."""
    if digest is None:
        return None
    return bytes.fromhex(digest.removeprefix(DIGEST_PREFIX))


def unpacked(raw: bytes | None) -> str | None:
    """A stored digest as every surface shows it, `sha256:<hex>`."""
    return None if raw is None else DIGEST_PREFIX + bytes(raw).hex()


def unhex(text: str | None) -> bytes | None:
    """SQLite's `unhex` (3.41), for the migration that packs digests on older libraries."""
    try:
        return None if text is None else bytes.fromhex(text)
    except ValueError:
        return None


def short(digest: str | None) -> str:
    """A digest as people read it in a message: enough of it to tell two apart."""
    if digest is None:
        return "none"
    return digest.removeprefix(DIGEST_PREFIX)[:12]
