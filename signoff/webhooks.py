"""Checking a decision callback (webhook) from Signoff before trusting it.

Signoff POSTs the decided approval as JSON with `X-Signoff-Timestamp` (Unix seconds) and
`X-Signoff-Signature` (`v1=` + hex HMAC-SHA256 of `v1:<timestamp>:<body>` with the shared
callback secret), as Slack signs its requests. Check the signature on the raw bytes, before
parsing, and refuse an old timestamp (a replayed delivery):

    approval = signoff.webhooks.verified(secret, request.headers, raw_body)
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Mapping

from signoff.errors import SignoffError
from signoff.models import Approval

TOLERANCE = 300.0
"""Seconds a delivery's timestamp may be from now, either way."""


class BadSignature(SignoffError):
    """The delivery is not from Signoff (wrong or missing signature), or too old."""


def signature(secret: str, timestamp: str, body: bytes) -> str:
    base = b"v1:" + timestamp.encode() + b":" + body
    return "v1=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def verify(
    secret: str,
    *,
    timestamp: str | None,
    signature_header: str | None,
    body: bytes,
    tolerance: float = TOLERANCE,
    now: float | None = None,
) -> None:
    """Raise `BadSignature` unless the body was signed with `secret` within `tolerance`."""
    if not secret:
        raise BadSignature("no callback secret to check the signature with")
    if not timestamp or not signature_header:
        raise BadSignature("the delivery has no X-Signoff-Timestamp or X-Signoff-Signature")
    if not timestamp.isascii() or not timestamp.isdigit() or len(timestamp) > 12:
        raise BadSignature(f"X-Signoff-Timestamp {timestamp[:20]!r} is not Unix seconds")
    if abs((time.time() if now is None else now) - int(timestamp)) > tolerance:
        raise BadSignature(f"the delivery is older than {tolerance:g} s (a replay?)")
    expected = signature(secret, timestamp, body)
    if not hmac.compare_digest(expected.encode(), signature_header.encode()):
        raise BadSignature("the signature does not match the body")


def verified(
    secret: str, headers: Mapping[str, str], body: bytes, *, tolerance: float = TOLERANCE
) -> Approval:
    """The approval a delivery carries, once its signature checks out."""
    lowered = {name.lower(): value for name, value in headers.items()}
    verify(
        secret,
        timestamp=lowered.get("x-signoff-timestamp"),
        signature_header=lowered.get("x-signoff-signature"),
        body=body,
        tolerance=tolerance,
    )
    return Approval.model_validate_json(body)
