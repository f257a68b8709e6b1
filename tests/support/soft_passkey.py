"""A passkey in software: a WebAuthn authenticator (ES256, "none" attestation) that answers
the approvals page's ceremonies as a browser's would, so a test can register and confirm
over plain HTTP. It signs what it is given: the server's checks are what is tested."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import struct
from typing import Any

import cbor2
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

UP_UV = 0x01 | 0x04
"""Flags: the user was present and verified."""
ATTESTED = 0x40
"""Flag: attested credential data follows (registration)."""


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class SoftPasskey:
    """One credential, with its own key and signature counter."""

    def __init__(self) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.credential_id = secrets.token_bytes(16)
        self.count = 0

    @property
    def id(self) -> str:
        return b64(self.credential_id)

    def create(self, options: dict[str, Any], origin: str) -> dict[str, Any]:
        """The answer to registration options (`navigator.credentials.create`)."""
        client = _client_data("webauthn.create", options["challenge"], origin)
        numbers = self.key.public_key().public_numbers()
        cose = {1: 2, 3: -7, -1: 1, -2: numbers.x.to_bytes(32), -3: numbers.y.to_bytes(32)}
        attested = (
            bytes(16) + struct.pack(">H", len(self.credential_id)) + self.credential_id
        ) + cbor2.dumps(cose)
        data = self._auth_data(options["rp"]["id"], UP_UV | ATTESTED) + attested
        attestation = cbor2.dumps({"fmt": "none", "attStmt": {}, "authData": data})
        return {
            "id": self.id,
            "rawId": self.id,
            "type": "public-key",
            "response": {"clientDataJSON": b64(client), "attestationObject": b64(attestation)},
        }

    def get(self, options: dict[str, Any], origin: str) -> dict[str, Any]:
        """The answer to authentication options (`navigator.credentials.get`), signed."""
        client = _client_data("webauthn.get", options["challenge"], origin)
        data = self._auth_data(options["rpId"], UP_UV)
        signed = data + hashlib.sha256(client).digest()
        signature = self.key.sign(signed, ec.ECDSA(hashes.SHA256()))
        return {
            "id": self.id,
            "rawId": self.id,
            "type": "public-key",
            "response": {
                "clientDataJSON": b64(client),
                "authenticatorData": b64(data),
                "signature": b64(signature),
                "userHandle": None,
            },
        }

    def _auth_data(self, rp_id: str, flags: int) -> bytes:
        self.count += 1
        rp_hash = hashlib.sha256(rp_id.encode()).digest()
        return rp_hash + bytes([flags]) + struct.pack(">I", self.count)


def _client_data(kind: str, challenge: str, origin: str) -> bytes:
    said = {"type": kind, "challenge": challenge, "origin": origin, "crossOrigin": False}
    return json.dumps(said, separators=(",", ":")).encode()
