"""The signing key a process signs receipts and audit anchors with, from the settings.

`signing_key` (the PEM itself, an environment secret) or `signing_key_file`; with neither,
the key `serve` created in its data directory on its first start (`serve` creates it and says
where; other commands use it if it is there). A key that cannot be read or is not an Ed25519
PEM stops start-up with the file's path; the key itself is never written to a log.
"""

from __future__ import annotations

import logging
from pathlib import Path

from bot.settings import ConfigError
from bot.settings import Settings
from bot.settings import secret
from runtime.errors import SigningKeyError
from runtime.records import sqlite_path
from runtime.signing import Signer
from runtime.signing import key_at
from runtime.signing import key_id
from runtime.signing import load_private_key
from runtime.signing import load_public_key
from runtime.signing import private_key_from_pem

log = logging.getLogger("signoff.server")
DEFAULT_KEY_FILE = "signoff-signing-key.pem"


def data_dir(settings: Settings) -> Path:
    """Where the process keeps what it makes for itself."""
    if settings.proof.data_dir:
        return Path(settings.proof.data_dir)
    url = settings.database.url
    if url.startswith("sqlite"):
        path = sqlite_path(url)
        if path != ":memory:":
            return Path(path).resolve().parent
    return Path.cwd()


def default_key_path(settings: Settings) -> Path:
    return data_dir(settings) / DEFAULT_KEY_FILE


def load_signer(settings: Settings, *, create: bool = False) -> Signer | None:
    """The configured signer; with none configured, the data directory's key, created
    there first when `create` (`serve`). None: nothing to sign with (a CLI command before the
    server ever started)."""
    proof = settings.proof
    try:
        retired = [load_public_key(Path(p)) for p in proof.retired_signing_keys]
        pem = secret(proof.signing_key)
        if pem:
            return Signer(private_key_from_pem(pem.encode(), "SIGNOFF_SIGNING_KEY"), tuple(retired))
        if proof.signing_key_file:
            return Signer(load_private_key(Path(proof.signing_key_file)), tuple(retired))
        path = default_key_path(settings)
        if not create:
            return Signer(load_private_key(path), tuple(retired)) if path.exists() else None
        key, made = key_at(path)
    except SigningKeyError as exc:
        raise ConfigError(str(exc)) from None
    if not made:
        return Signer(key, tuple(retired))
    log.warning(
        "no signing key was configured: created one at %s (key id %s); it signs receipts "
        "and audit anchors: back it up, and keep it as secret as the database",
        path,
        key_id(key.public_key()),
    )
    return Signer(key, tuple(retired))
