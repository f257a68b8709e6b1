"""Step-up with a passkey (WebAuthn, the `webauthn` package): a person registers passkeys on
the approvals page, and an approval whose policy says `step_up = "passkey"` counts only once
they confirm it with one of theirs (`Runtime.decide(..., stepped_up=True)`).

Each ceremony's challenge is made here, for one person and one purpose (registering, or
approving one approval), lives `CHALLENGE_TTL` seconds and is used once: an assertion sent
again finds no challenge and is refused. An assertion is checked against the person's own
passkeys only (another person's credential is not theirs, whatever it signs), and its
signature counter must grow (a compare-and-set in the store). Challenges are kept in the
database and taken by one statement, so behind several processes (or across a restart) an
answer is checked by whichever process it reaches, and used once.
"""

from __future__ import annotations

import json
import secrets
from typing import Any
from urllib.parse import urlsplit

from runtime import Runtime
from runtime.records import Passkey

CHALLENGE_TTL = 300.0


class PasskeyRefused(ValueError):
    """The passkey ceremony failed; the message says why (nothing changed)."""


class Challenges:
    """Challenges issued and not yet used, kept in the database (`Runtime.keep_challenge`):
    an answer may reach another process than the one that issued its challenge."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    async def issue(self, person: str, purpose: str) -> bytes:
        challenge = secrets.token_bytes(32)
        await self.rt.keep_challenge(
            _b64(challenge), person=person, purpose=purpose, ttl=CHALLENGE_TTL
        )
        return challenge

    async def take(self, credential: dict[str, Any], person: str, purpose: str) -> bytes:
        """The challenge the credential answers, once, if it was issued to `person` for
        `purpose` and has not expired (taken either way: an answer is never tried twice)."""
        from webauthn.helpers import base64url_to_bytes

        said = str(_client_data(credential).get("challenge") or "")
        found = await self.rt.take_challenge(said) if said else None
        if found is None:
            raise PasskeyRefused(
                "This confirmation was used already, or it took too long: nothing changed. "
                "Try again."
            )
        if found != (person, purpose):
            raise PasskeyRefused("This confirmation was not made for you here: nothing changed.")
        return base64url_to_bytes(said)


class Passkeys:
    def __init__(self, rt: Runtime, public_url: str) -> None:
        parts = urlsplit(public_url)
        self.rt = rt
        self.rp_id = parts.hostname or "localhost"
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.challenges = Challenges(rt)

    async def registration_options(self, person: str, email: str) -> str:
        from webauthn import generate_registration_options
        from webauthn import options_to_json
        from webauthn.helpers.structs import AuthenticatorSelectionCriteria
        from webauthn.helpers.structs import PublicKeyCredentialDescriptor
        from webauthn.helpers.structs import ResidentKeyRequirement

        known = [_b64_bytes(p.id) for p in await self.rt.passkeys(person)]
        options = generate_registration_options(
            rp_id=self.rp_id,
            rp_name="Signoff",
            user_name=email,
            user_id=person.encode(),
            challenge=await self.challenges.issue(person, "register"),
            exclude_credentials=[PublicKeyCredentialDescriptor(id=k) for k in known],
            authenticator_selection=AuthenticatorSelectionCriteria(
                resident_key=ResidentKeyRequirement.DISCOURAGED
            ),
        )
        return str(options_to_json(options))

    async def register(self, person: str, credential: dict[str, Any]) -> Passkey:
        from webauthn import verify_registration_response
        from webauthn.helpers import bytes_to_base64url
        from webauthn.helpers.exceptions import InvalidRegistrationResponse

        challenge = await self.challenges.take(credential, person, "register")
        try:
            verified = verify_registration_response(
                credential=credential,
                expected_challenge=challenge,
                expected_rp_id=self.rp_id,
                expected_origin=self.origin,
            )
        except (InvalidRegistrationResponse, ValueError, KeyError, TypeError) as exc:
            raise PasskeyRefused(f"The passkey could not be registered: {exc}") from None
        passkey = Passkey(
            id=bytes_to_base64url(verified.credential_id),
            person=person,
            public_key=bytes_to_base64url(verified.credential_public_key),
            sign_count=verified.sign_count,
            created_at=self.rt.clock(),
        )
        if not await self.rt.add_passkey(passkey):
            raise PasskeyRefused("This passkey is registered already: nothing changed.")
        return passkey

    async def approval_options(self, person: str, approval_id: str) -> str:
        from webauthn import generate_authentication_options
        from webauthn import options_to_json
        from webauthn.helpers.structs import PublicKeyCredentialDescriptor

        theirs = await self.rt.passkeys(person)
        if not theirs:
            raise PasskeyRefused(
                "You have no passkey yet: register one on /approvals/passkeys first."
            )
        options = generate_authentication_options(
            rp_id=self.rp_id,
            challenge=await self.challenges.issue(person, f"approve {approval_id}"),
            allow_credentials=[PublicKeyCredentialDescriptor(id=_b64_bytes(p.id)) for p in theirs],
        )
        return str(options_to_json(options))

    async def confirm(self, person: str, approval_id: str, credential: dict[str, Any]) -> None:
        """Check an assertion for approving `approval_id` as `person` (PasskeyRefused if it
        is not a fresh one by one of their own passkeys)."""
        from webauthn import verify_authentication_response
        from webauthn.helpers.exceptions import InvalidAuthenticationResponse

        challenge = await self.challenges.take(credential, person, f"approve {approval_id}")
        used = str(credential.get("id") or "")
        passkey = next((p for p in await self.rt.passkeys(person) if p.id == used), None)
        if passkey is None:
            raise PasskeyRefused("That passkey is not one of yours: nothing changed.")
        try:
            verified = verify_authentication_response(
                credential=credential,
                expected_challenge=challenge,
                expected_rp_id=self.rp_id,
                expected_origin=self.origin,
                credential_public_key=_b64_bytes(passkey.public_key),
                credential_current_sign_count=passkey.sign_count,
            )
        except (InvalidAuthenticationResponse, ValueError, KeyError, TypeError) as exc:
            raise PasskeyRefused(f"The passkey's signature was refused: {exc}") from None
        if not await self.rt.use_passkey(
            passkey.id, person=person, sign_count=verified.new_sign_count
        ):
            raise PasskeyRefused("That signature was used already: nothing changed.")


def _client_data(credential: dict[str, Any]) -> dict[str, Any]:
    from webauthn.helpers import base64url_to_bytes

    try:
        raw = base64url_to_bytes(str(credential["response"]["clientDataJSON"]))
        found = json.loads(raw)
    except (KeyError, TypeError, ValueError) as exc:
        raise PasskeyRefused(f"This is not a passkey's answer: {exc}") from None
    return found if isinstance(found, dict) else {}


def _b64(raw: bytes) -> str:
    from webauthn.helpers import bytes_to_base64url

    return str(bytes_to_base64url(raw))


def _b64_bytes(text: str) -> bytes:
    from webauthn.helpers import base64url_to_bytes

    return bytes(base64url_to_bytes(text))
