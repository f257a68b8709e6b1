"""Signing in through any OpenID Connect provider (authorization code flow with PKCE and a
nonce): the provider's discovery document, the redirect, and the callback that exchanges the
code (authlib) and checks the ID token's signature, issuer, audience, expiry and nonce
(joserfc, against the provider's published keys). What comes out is a verified e-mail."""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("signoff.approvers")
SCOPE = "openid email profile"
TIMEOUT = 10.0


class SignInFailed(Exception):
    """The provider's answer did not sign anyone in (the message says why)."""


class Provider:
    def __init__(
        self, issuer: str, client_id: str, client_secret: str | None, redirect_uri: str
    ) -> None:
        self.issuer = issuer.rstrip("/")
        self.client_id = client_id
        self.client_secret = client_secret
        self.redirect_uri = redirect_uri
        self._metadata: dict[str, Any] | None = None

    async def metadata(self) -> dict[str, Any]:
        """The discovery document, read once."""
        if self._metadata is None:
            url = f"{self.issuer}/.well-known/openid-configuration"
            self._metadata = await _get_json(url)
        return self._metadata

    async def start(self) -> tuple[str, dict[str, str]]:
        """Where to send the person, and what the callback must find again."""
        from authlib.common.security import generate_token

        meta = await self.metadata()
        nonce, verifier = generate_token(32), generate_token(48)
        async with self._oauth() as oauth:
            url, state = oauth.create_authorization_url(
                meta["authorization_endpoint"], nonce=nonce, code_verifier=verifier
            )
        return url, {"state": state, "nonce": nonce, "verifier": verifier}

    async def finish(self, callback_url: str, flow: dict[str, str]) -> str:
        """The verified e-mail address of whoever the provider signed in."""
        from authlib.oauth2 import OAuth2Error

        meta = await self.metadata()
        async with self._oauth(state=flow["state"]) as oauth:
            try:
                token = await oauth.fetch_token(
                    meta["token_endpoint"],
                    authorization_response=callback_url,
                    code_verifier=flow["verifier"],
                )
            except OAuth2Error as exc:
                raise SignInFailed(f"the provider refused the sign-in: {exc}") from None
        raw = token.get("id_token")
        if not isinstance(raw, str):
            raise SignInFailed("the provider sent no ID token")
        claims = await self._claims(raw, flow["nonce"], meta)
        email = claims.get("email")
        if not isinstance(email, str) or "@" not in email:
            raise SignInFailed("the provider did not say the person's e-mail address")
        if claims.get("email_verified") is False:
            raise SignInFailed(f"the provider has not verified {email}")
        return email

    async def _claims(self, raw: str, nonce: str, meta: dict[str, Any]) -> dict[str, Any]:
        from joserfc import jwt
        from joserfc.errors import JoseError
        from joserfc.jwk import KeySet

        keys = KeySet.import_key_set(await _get_json(meta["jwks_uri"]))  # type: ignore[arg-type]
        registry = jwt.JWTClaimsRegistry(
            iss={"essential": True, "value": meta.get("issuer", self.issuer)},
            aud={"essential": True, "value": self.client_id},
            nonce={"essential": True, "value": nonce},
            exp={"essential": True},
        )
        try:
            token = jwt.decode(raw, keys)
            registry.validate(token.claims)
        except (JoseError, ValueError) as exc:
            raise SignInFailed(f"the ID token does not hold: {exc}") from None
        return dict(token.claims)

    def _oauth(self, state: str | None = None) -> Any:
        from authlib.integrations.httpx_client import AsyncOAuth2Client

        return AsyncOAuth2Client(
            self.client_id,
            self.client_secret,
            scope=SCOPE,
            redirect_uri=self.redirect_uri,
            code_challenge_method="S256",
            token_endpoint_auth_method="client_secret_post" if self.client_secret else "none",
            state=state,
            timeout=TIMEOUT,
        )


async def _get_json(url: str) -> dict[str, Any]:
    import httpx

    try:
        async with httpx.AsyncClient(timeout=TIMEOUT) as http:
            response = await http.get(url)
            response.raise_for_status()
            found = response.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise SignInFailed(f"{url} did not answer: {exc}") from None
    if not isinstance(found, dict):
        raise SignInFailed(f"{url} did not answer with a JSON object")
    return found
