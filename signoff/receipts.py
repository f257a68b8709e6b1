"""Checking a Signoff receipt (a decision, signed with Signoff's Ed25519 key) before acting
on it: a payment provider before paying, an auditor reading a file.

    keys = signoff.receipts.fetch_keys("https://signoff.example/v1/keys")   # or a saved JWKS
    signoff.receipts.verify(receipt, keys, args=request_args, idempotency_key=key)

`verify` raises `BadReceipt` saying why unless the signature is Signoff's (a key in the
JWKS, by its key id) over every field, the decision is "approved", and, when given, the
arguments (their canonical JSON's digest) and the idempotency key are the ones approved. The
signature covers the canonical JSON (keys sorted, no whitespace, text as is) of the receipt
without its signature's `value`.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING
from typing import Any

from signoff.errors import SignoffError

if TYPE_CHECKING:  # cryptography and urllib load when a receipt is checked or keys fetched
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

RECEIPT_TYPE = "signoff.approval_receipt"


class BadReceipt(SignoffError):
    """The receipt is not a valid Signoff receipt for this call."""


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def args_digest(args: Mapping[str, Any]) -> str:
    """The digest Signoff binds a call's arguments by (`sha256:` + hex)."""
    return "sha256:" + hashlib.sha256(canonical(dict(args)).encode()).hexdigest()


def _unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _public_keys(jwks: Mapping[str, Any]) -> dict[str, Ed25519PublicKey]:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    keys = {}
    for jwk in jwks.get("keys", []):
        if jwk.get("kty") == "OKP" and jwk.get("crv") == "Ed25519" and "kid" in jwk:
            keys[str(jwk["kid"])] = Ed25519PublicKey.from_public_bytes(_unb64url(jwk["x"]))
    return keys


def check_signature(document: Mapping[str, Any], jwks: Mapping[str, Any]) -> str:
    """The key id that signed `document` (a receipt or an audit anchor); `BadReceipt` unless
    its signature verifies with that key of the JWKS."""
    from cryptography.exceptions import InvalidSignature

    signature = document.get("signature")
    if not isinstance(signature, Mapping) or not isinstance(signature.get("value"), str):
        raise BadReceipt("it carries no signature")
    if signature.get("alg") != "EdDSA":
        raise BadReceipt(f"its signature's algorithm {signature.get('alg')!r} is not EdDSA")
    kid = str(signature.get("kid"))
    key = _public_keys(jwks).get(kid)
    if key is None:
        raise BadReceipt(f"it was signed with key {kid!r}, which is not among the keys given")
    header = {k: v for k, v in signature.items() if k != "value"}
    unsigned = {k: v for k, v in document.items() if k != "signature"}
    message = canonical(unsigned | {"signature": header}).encode()
    try:
        key.verify(_unb64url(signature["value"]), message)
    except (InvalidSignature, ValueError):
        raise BadReceipt(
            f"its signature does not match its content (key {kid}): a field was changed"
        ) from None
    return kid


def verify(
    receipt: Mapping[str, Any],
    jwks: Mapping[str, Any],
    *,
    args: Mapping[str, Any] | None = None,
    idempotency_key: str | None = None,
    approved: bool = True,
) -> Mapping[str, Any]:
    """The receipt, once it checks out (see the module's text); `BadReceipt` otherwise."""
    if receipt.get("type") != RECEIPT_TYPE:
        raise BadReceipt(f"it is not a Signoff receipt (type {receipt.get('type')!r})")
    check_signature(receipt, jwks)
    if approved and receipt.get("decision") != "approved":
        raise BadReceipt(f"the decision it records is {receipt.get('decision')!r}, not approved")
    if args is not None and args_digest(args) != receipt.get("args_digest"):
        raise BadReceipt(
            f"it approves other arguments (digest {receipt.get('args_digest')}) than these "
            f"({args_digest(args)})"
        )
    if idempotency_key is not None and idempotency_key != receipt.get("idempotency_key"):
        raise BadReceipt(
            f"it approves the call under key {receipt.get('idempotency_key')!r}, "
            f"not {idempotency_key!r}"
        )
    return receipt


def fetch_keys(url: str, *, timeout: float = 10.0) -> dict[str, Any]:
    """Signoff's JWKS from its `/v1/keys` URL (a provider caches it; a key id it does not
    know means fetch again: Signoff rotated its key)."""
    import urllib.request

    with urllib.request.urlopen(url, timeout=timeout) as response:
        keys: dict[str, Any] = json.loads(response.read())
    return keys
