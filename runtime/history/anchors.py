"""Anchors of the audit chain: its head (an event's place and hash) recorded at a moment and
signed with Signoff's key like a receipt, so a copy of the trail, or the database itself
later, can be held to it: events deleted from the end, or a chain rebuilt after an edit, no
longer match a signed anchor. The server anchors once a day; a prune anchors where it cut.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from runtime.signing import Signer
from store import Store
from store.records import AuditAnchor

ANCHOR_TYPE = "signoff.audit_anchor"


def document(anchor: AuditAnchor) -> dict[str, Any]:
    """What an anchor's signature covers."""
    return {
        "type": ANCHOR_TYPE,
        "version": 1,
        "seq": anchor.seq,
        "kind": anchor.kind,
        "hash": anchor.hash,
        "at": anchor.at.isoformat().replace("+00:00", "Z"),
    }


async def anchor(
    store: Store, signer: Signer | None, *, kind: str, at: datetime
) -> AuditAnchor | None:
    """Anchor the chain's head (once per place and kind), then sign every anchor not signed
    yet (a prune's cuts among them); the new anchor as stored, or None on an empty trail."""
    made = await store.add_anchor(kind, at=at)
    await sign_unsigned(store, signer)
    if made is None:
        return None
    found = [a for a in await store.list_anchors() if (a.seq, a.kind) == (made.seq, made.kind)]
    return found[0] if found else made


async def sign_unsigned(store: Store, signer: Signer | None) -> int:
    """Sign the anchors that have no signature yet; how many."""
    if signer is None:
        return 0
    unsigned = [a for a in await store.list_anchors() if a.signed is None]
    for each in unsigned:
        await store.sign_anchor(each, signer.sign(document(each)))
    return len(unsigned)
