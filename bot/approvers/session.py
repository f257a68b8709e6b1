"""Signed-cookie sessions for the approvals page, and the CSRF token every POST carries.

The cookie holds who signed in and a random CSRF token, signed (HMAC, `itsdangerous`) and
dated: a cookie changed by hand, or older than `MAX_AGE`, is no session. A POST is taken
only with the session's CSRF token in its form (compared in constant time); SameSite=Lax
keeps the cookie off other sites' POSTs as well.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from typing import Any

from aiohttp import web

COOKIE = "signoff_session"
LOGIN_COOKIE = "signoff_login"
MAX_AGE = 12 * 3600
"""Seconds a sign-in lasts."""
LOGIN_MAX_AGE = 600
"""Seconds between leaving for the provider and coming back."""


@dataclass(frozen=True)
class Session:
    person: str
    email: str
    csrf: str


class Sessions:
    def __init__(self, secret: str, *, secure: bool) -> None:
        from itsdangerous import URLSafeTimedSerializer

        self._signer = URLSafeTimedSerializer(secret, salt="signoff-session")
        self._login = URLSafeTimedSerializer(secret, salt="signoff-login")
        self.secure = secure

    def read(self, request: web.Request) -> Session | None:
        data = self._load(self._signer, request.cookies.get(COOKIE), MAX_AGE)
        if not isinstance(data, dict):
            return None
        try:
            return Session(str(data["p"]), str(data["e"]), str(data["c"]))
        except KeyError:
            return None

    def start(self, response: web.StreamResponse, person: str, email: str) -> None:
        value = self._signer.dumps({"p": person, "e": email, "c": secrets.token_urlsafe(24)})
        self._set(response, COOKIE, value, MAX_AGE)

    def end(self, response: web.StreamResponse) -> None:
        response.del_cookie(COOKIE, path="/")

    def remember_login(self, response: web.StreamResponse, flow: dict[str, str]) -> None:
        self._set(response, LOGIN_COOKIE, self._login.dumps(flow), LOGIN_MAX_AGE)

    def login(self, request: web.Request) -> dict[str, str] | None:
        data = self._load(self._login, request.cookies.get(LOGIN_COOKIE), LOGIN_MAX_AGE)
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else None

    def _set(self, response: web.StreamResponse, name: str, value: str, age: int) -> None:
        response.set_cookie(
            name, value, max_age=age, path="/", httponly=True, samesite="Lax", secure=self.secure
        )

    @staticmethod
    def _load(signer: Any, value: str | None, age: int) -> Any:
        from itsdangerous import BadSignature

        if not value:
            return None
        try:
            return signer.loads(value, max_age=age)
        except BadSignature:  # tampered, expired or from another secret
            return None


def check_csrf(session: Session, given: str | None) -> None:
    """Refuse a POST whose form does not carry the session's CSRF token."""
    if not given or not hmac.compare_digest(session.csrf, given):
        raise web.HTTPForbidden(text="This form is out of date or not from this page; reload it.")
