"""What the approvals page's handlers share: the runtime, who people are, the sessions,
the sign-in provider, and where background work goes."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field

from aiohttp import web

from bot.addresses import People
from bot.approvers.oidc import Provider
from bot.approvers.passkeys import Passkeys
from bot.approvers.session import Sessions
from bot.decision_links import Links
from bot.tasks import Background
from runtime import Runtime
from runtime.display import Display


@dataclass
class Approvers:
    rt: Runtime
    people: People
    sessions: Sessions
    background: Background
    provider: Provider | None = None
    public_url: str | None = None
    displays: dict[str, Display] = field(default_factory=dict)
    passkeys: Passkeys | None = None
    """Step-up with passkeys (`bot.approvers.passkeys`); None without a public_url."""
    links: Links | None = None
    """Reads e-mailed decision links (`bot.approvers.confirm`)."""

    def callback_url(self, request: web.Request) -> str:
        """The URL the provider sent the person back to, as the provider saw it."""
        if self.public_url:
            return f"{self.public_url.rstrip('/')}{request.path_qs}"
        return str(request.url)


APPROVERS = web.AppKey("approvers", Approvers)
