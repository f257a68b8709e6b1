"""Idempotency keys (docs/architecture.md rule 2).

By default a key is derived from the tool's name and its canonical arguments within the run's
lineage, so a fork or a re-issued call maps to the same key. A tool may name its business
identity instead (an invoice id): the key handed to the tool is then the same across
lineages, so the outside system dedupes it everywhere; the ledger still dedupes within a
lineage only.
"""

from __future__ import annotations

from hashlib import blake2b
from typing import Any

from store.digest import args_digest as args_digest
from store.digest import canonical_json as canonical_json

SEPARATE = "~separate:"
"""What joins a key and the suffix a person chose by approving a call as a separate effect."""


def idempotency_key(
    lineage_id: str,
    tool: str,
    args: dict[str, Any],
    business_id: str | None = None,
    *,
    canonical: str | None = None,
) -> str:
    """`canonical`: `canonical_json(args)`, when the caller has it already."""
    if business_id is not None:
        material = f"{tool}\x00{business_id}"
    else:
        material = f"{lineage_id}\x00{tool}\x00{canonical or canonical_json(args)}"
    return f"{tool}-{blake2b(material.encode(), digest_size=12).hexdigest()}"


def compensation_key(lineage_id: str, run_id: str, call_id: str) -> str:
    material = f"{lineage_id}\x00compensate\x00{run_id}\x00{call_id}"
    return f"undo-{blake2b(material.encode(), digest_size=12).hexdigest()}"


def separate_key(key: str, suffix: str | None) -> str:
    """The key a call runs under: its own, or re-keyed because a person approved it as a
    separate effect from another call under the same key with other arguments."""
    return key if suffix is None else f"{key}{SEPARATE}{suffix}"
