"""Signoff's Ed25519 signing keys: one that signs (receipts, audit anchors) and the retired
ones whose signatures still verify, each named by its key id, published as a JWKS.

A key id is the key's JWK thumbprint (RFC 7638), so it is the same wherever the key is
loaded and a rotated key can never take an old id. The private key never leaves this module's
objects: nothing here formats it for a log, an error or an API answer.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import hashlib
import json
import os
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from runtime.errors import SigningKeyError
from store.digest import canonical_json

ALGORITHM = "EdDSA"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def public_jwk(key: Ed25519PublicKey) -> dict[str, str]:
    """The public key as a JWK (RFC 8037), with its key id."""
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    jwk = {"crv": "Ed25519", "kty": "OKP", "x": b64url(raw)}
    thumbprint = hashlib.sha256(json.dumps(jwk, separators=(",", ":")).encode()).digest()
    return jwk | {"kid": b64url(thumbprint), "alg": ALGORITHM, "use": "sig"}


def key_id(key: Ed25519PublicKey) -> str:
    return public_jwk(key)["kid"]


@dataclass(frozen=True, slots=True)
class Signer:
    """Signs with `key`; `retired` keys are published so what they signed still verifies."""

    key: Ed25519PrivateKey
    retired: tuple[Ed25519PublicKey, ...] = ()

    @property
    def kid(self) -> str:
        return key_id(self.key.public_key())

    def sign(self, document: dict[str, Any]) -> dict[str, Any]:
        """`document` with a `signature` member: the algorithm, the key id and the Ed25519
        signature of the canonical JSON of everything else (those two included)."""
        unsigned = {k: v for k, v in document.items() if k != "signature"}
        header = {"alg": ALGORITHM, "kid": self.kid}
        message = canonical_json(unsigned | {"signature": header}).encode()
        return unsigned | {"signature": header | {"value": b64url(self.key.sign(message))}}

    def jwks(self) -> dict[str, Any]:
        """The public keys, the signing one first (`GET /v1/keys`)."""
        keys = [self.key.public_key(), *self.retired]
        seen: dict[str, dict[str, str]] = {}
        for key in keys:
            jwk = public_jwk(key)
            seen.setdefault(jwk["kid"], jwk)
        return {"keys": list(seen.values())}


def load_private_key(path: Path) -> Ed25519PrivateKey:
    """The Ed25519 private key in a PEM file, or `SigningKeyError` naming the file."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SigningKeyError(f"{path}: cannot read the signing key: {exc.strerror}") from None
    return private_key_from_pem(data, str(path))


def private_key_from_pem(data: bytes, where: str) -> Ed25519PrivateKey:
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise SigningKeyError(
            f"{where}: not an unencrypted PEM private key (make one with "
            "`signoff receipts new-key FILE`)"
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningKeyError(f"{where}: the key is not an Ed25519 key")
    return key


def load_public_key(path: Path) -> Ed25519PublicKey:
    """A retired key: its public PEM (or its private PEM, whose public half is used)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SigningKeyError(f"{path}: cannot read the key: {exc.strerror}") from None
    if b"PRIVATE KEY" in data:
        return private_key_from_pem(data, str(path)).public_key()
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError):
        raise SigningKeyError(f"{path}: not a PEM public key") from None
    if not isinstance(key, Ed25519PublicKey):
        raise SigningKeyError(f"{path}: the key is not an Ed25519 key")
    return key


def create_key(path: Path) -> Ed25519PrivateKey:
    """A new key written to `path` (readable by its owner only); refuses to overwrite one."""
    key = Ed25519PrivateKey.generate()
    if not _publish(path, _private_pem(key)):
        raise SigningKeyError(f"{path}: a key is there already; it was not replaced")
    return key


def key_at(path: Path) -> tuple[Ed25519PrivateKey, bool]:
    """The key in `path`, made there first if there is none (True: this call made it).
    Processes starting together agree on one key: the first to publish wins, the others
    load what it published."""
    if not path.exists():
        key = Ed25519PrivateKey.generate()
        if _publish(path, _private_pem(key)):
            return key, True
    return load_private_key(path), False


def _private_pem(key: Ed25519PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _publish(path: Path, pem: bytes) -> bool:
    """Write `pem` to `path` unless a file is there (False). The key is written and synced
    under a private name first and then linked into place, so a process reading `path` sees a
    whole key or none, never the half another process is still writing. Where the filesystem
    has no hard links (vfat, some network mounts) it is created in place, exclusively."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SigningKeyError(f"{path.parent}: cannot make the directory: {exc.strerror}") from None
    draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    try:
        _write_exclusive(draft, pem)
        try:
            os.link(draft, path)
        except OSError as exc:
            if exc.errno not in _NO_HARD_LINKS:
                raise
            _write_exclusive(path, pem)
    except FileExistsError:
        return False
    except OSError as exc:
        raise SigningKeyError(f"{path}: cannot write the signing key: {exc.strerror}") from None
    finally:
        with contextlib.suppress(OSError):  # none was made, or the filesystem is read-only
            draft.unlink()
    _sync_directory(path.parent)
    return True


_NO_HARD_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV}


def _write_exclusive(path: Path, data: bytes) -> None:
    """`data` in a new file readable by its owner only, synced; FileExistsError if one is
    there. A write that fails (a full disk) takes the file away again."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
    except OSError:
        with contextlib.suppress(OSError):
            path.unlink()
        raise


def _sync_directory(directory: Path) -> None:
    """Make the new name durable, where the filesystem lets a directory be synced (the key is
    in place either way)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def public_pem(key: Ed25519PublicKey) -> str:
    return key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()


def signer_of(key: Ed25519PrivateKey, retired: Iterable[Ed25519PublicKey] = ()) -> Signer:
    return Signer(key, tuple(retired))
