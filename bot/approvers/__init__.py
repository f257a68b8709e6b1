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
from bot.approvers import routes
from bot.approvers.context import APPROVERS, Approvers
from bot.approvers.oidc import Provider
from bot.approvers.people import People
from bot.approvers.session import Sessions
from bot.settings import WebSettings, secret
from bot.tasks import Background
from runtime import Runtime

__all__ = ["Approvers", "mount"]


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
    )
    app[APPROVERS] = parts
    routes.add_routes(app)
    return parts


def _provider(web_settings: WebSettings) -> Provider | None:
    if not web_settings.signs_in or web_settings.oidc_issuer is None:
        return None
    base = (web_settings.public_url or "").rstrip("/")
    return Provider(
        web_settings.oidc_issuer,
        web_settings.oidc_client_id or "",
        secret(web_settings.oidc_client_secret),
        f"{base}/approvals/callback",
    )
