"""E-mailed decision links (`bot.email` sends them, `bot.approvers.confirm` reads them):
signed tokens, each bound to one approval, one person and one decision, and single-use.

A token is the approval id, the person it was sent to (they decide as that person), the
decision, and a nonce, signed (HMAC, `itsdangerous`) with the session secret under its own
salt. A token changed by hand, signed with another secret, or naming another approval than
the page it is opened on is *foreign*; its nonce is written to the database with the decision a
person confirms through it (`Runtime.decide(..., link_nonce=)`, one transaction), so a
second use is *used*; and it
lives as long as its approval waits (*expired* past the deadline, or once decided).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

SALT = "signoff-email-link"
DECISIONS = ("approved", "declined")


@dataclass(frozen=True)
class Link:
    approval_id: str
    person: str
    decision: str
    nonce: str


class Links:
    def __init__(self, secret: str) -> None:
        from itsdangerous import URLSafeSerializer

        self._signer = URLSafeSerializer(secret, salt=SALT)

    def make(self, approval_id: str, person: str, nonce: str | None = None) -> dict[str, str]:
        """One token per decision, sharing one nonce (one message's links are one use)."""
        nonce = nonce or secrets.token_urlsafe(16)
        return {
            decision: self._signer.dumps({"a": approval_id, "p": person, "d": decision, "n": nonce})
            for decision in DECISIONS
        }

    def read(self, token: str) -> Link | None:
        """The link a token carries; None when it is not one this server signed."""
        from itsdangerous import BadSignature

        try:
            data: Any = self._signer.loads(token)
        except BadSignature:
            return None
        try:
            link = Link(str(data["a"]), str(data["p"]), str(data["d"]), str(data["n"]))
        except (KeyError, TypeError):
            return None
        return link if link.decision in DECISIONS else None
