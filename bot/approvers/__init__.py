"""The approvals page `signoff serve` serves at /approvals: people who sign in through an
OpenID Connect provider see what waits for their decision and decide it there, under the
same approval records, policies and checks as Slack (docs/approvers.md).

Its libraries (authlib, joserfc, itsdangerous, httpx) are imported when the page is mounted
or used, never by `signoff --help`.
"""

from __future__ import annotations

import secrets

from aiohttp import web

from bot import reading
from bot.addresses import People
from bot.approvers import away
from bot.approvers import confirm
from bot.approvers import routes
from bot.approvers.context import APPROVERS
from bot.approvers.context import Approvers
from bot.approvers.oidc import Provider
from bot.approvers.passkeys import Passkeys
from bot.approvers.session import Sessions
from bot.decision_links import Links
from bot.sections import WebSettings
from bot.settings import ConfigError
from bot.settings import secret
from bot.tasks import Background
from runtime import Runtime

__all__ = ["Approvers", "check_settings", "mount"]


def mount(
    app: web.Application, rt: Runtime, web_settings: WebSettings, background: Background
) -> Approvers:
    """Add /approvals to `app`; the parts its handlers share."""
    key = secret(web_settings.session_secret) or secrets.token_urlsafe(32)
    public = web_settings.public_url
    parts = Approvers(
        rt=rt,
        people=People(web_settings.people),
        sessions=Sessions(key, secure=bool(public and public.startswith("https://"))),
        background=background,
        provider=_provider(web_settings),
        public_url=public,
        displays=reading.displays(rt),
        passkeys=Passkeys(rt, public) if public else None,
        links=Links(key),
    )
    app[APPROVERS] = parts
    confirm.add_routes(app)  # before /approvals/{approval_id}
    away.add_routes(app)
    routes.add_routes(app)
    return parts


def check_settings(web_settings: WebSettings) -> None:
    """Refuse a half-configured sign-in before anything is opened."""
    issuer = web_settings.oidc_issuer
    if issuer and not web_settings.oidc_client_id:
        raise ConfigError("oidc_issuer needs oidc_client_id (the client the provider knows)")
    if issuer and not web_settings.public_url:
        raise ConfigError("oidc_issuer needs public_url (where the provider sends people back)")


def _provider(web_settings: WebSettings) -> Provider | None:
    """The sign-in provider, if one is configured."""
    issuer = web_settings.oidc_issuer
    if not issuer:
        return None
    base = (web_settings.public_url or "").rstrip("/")
    return Provider(
        issuer,
        web_settings.oidc_client_id or "",
        secret(web_settings.oidc_client_secret),
        f"{base}/approvals/callback",
    )
