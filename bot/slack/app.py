"""The Slack surface of a process: the bolt app, its transport, and the outbox sender.

HTTP (`/slack/events`, bolt verifies the signature and the 5-minute timestamp) when a signing
secret is set; Socket Mode when `SLACK_APP_TOKEN` is set. Missing settings are one line
naming the variable.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.adapter.aiohttp import to_bolt_request
from slack_bolt.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_bolt.logger.messages import warning_client_prioritized_and_token_skipped
from slack_bolt.logger.messages import warning_token_skipped
from slack_sdk.web.async_client import AsyncWebClient

from bot.directory import web_client
from bot.outbox import OutboxNudge
from bot.outbox import OutboxSender
from bot.outbox import Timing
from bot.settings import ConfigError
from bot.settings import Settings
from bot.settings import secret
from bot.slack import inbound
from bot.slack import listeners
from bot.slack.channels import configured
from bot.slack.delivery import Channels
from bot.slack.delivery import SlackDelivery
from bot.slack.home import HomeTabs
from bot.slack.link import SlackLink
from bot.slack.link import socket_logger
from bot.slack.once import Once
from bot.slack.outcomes import Outcomes
from bot.slack.page_reminders import PageReminders
from bot.slack.reconcile import Reconciler
from bot.slack.socket_mode import CheckedSocketModeHandler
from bot.tasks import Background
from runtime import Runtime
from runtime.deliveries import Deliveries

log = logging.getLogger("signoff.slack")


class _UnusedTokenNotice(logging.Filter):
    """Bolt warns at start-up that SLACK_BOT_TOKEN "will be unused" (or "ignored") when it is
    also given a client or an `authorize`; Signoff hands it the very same token through
    them, so the warning is noise."""

    notices = frozenset({warning_client_prioritized_and_token_skipped(), warning_token_skipped()})

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() not in self.notices


def quiet_unused_token_notice() -> None:
    bolt = logging.getLogger("slack_bolt.AsyncApp")
    if not any(isinstance(f, _UnusedTokenNotice) for f in bolt.filters):
        bolt.addFilter(_UnusedTokenNotice())


EVENTS_PATH = "/slack/events"
LINK_TIMEOUT = 10
"""Seconds one check of Slack (auth.test, a channel) may take before it counts as failed."""


@dataclass
class SlackSurface:
    app: AsyncApp
    client: AsyncWebClient
    sender: OutboxSender
    link: SlackLink
    """Reaches Slack in the background: who the bot is, the channels, Socket Mode."""
    http: bool
    """Whether Slack reaches this process over HTTP (a signing secret is set)."""
    deliveries: Deliveries
    page_reminders: PageReminders
    verifier: inbound.Signature | None = None
    """Checks Slack's signature on the raw body (None: Socket Mode only)."""
    once: Once | None = None
    """Notes each request in the database, so a retry reaching any process is handled once."""
    reconciler: Reconciler | None = None
    """Sweeps where a duplicate may be (None: nothing is ever swept)."""
    stopped: bool = False

    def mount(self, web_app: web.Application) -> None:
        """Serve `/slack/events` next to the HTTP API, when Slack is to send requests there."""
        if not self.http:
            return
        web_app.router.add_post(EVENTS_PATH, self.events)

    async def events(self, request: web.Request) -> web.StreamResponse:
        """One request from Slack: signature on the raw bytes first, then parsed with limits
        and its shape checked (400 and one log line when it is not what Slack sends), a
        retried event answered without handling it twice, then bolt."""
        raw = await request.read()
        if not inbound.verified(self.verifier, raw, request.headers):
            log.warning(
                "slack: refused a request to %s: bad signature or a timestamp over 5 "
                "minutes old (check SLACK_SIGNING_SECRET and this machine's clock)",
                EVENTS_PATH,
            )
            return web.json_response({"error": "invalid request"}, status=401)
        try:
            body = inbound.parse(raw, request.content_type)
            problem = inbound.shape_error(body)
            if problem is not None:
                raise inbound.Malformed(problem)
        except inbound.Malformed as exc:
            log.warning("slack: refused a signed request to %s: %s", EVENTS_PATH, exc)
            return web.json_response({"error": f"malformed request: {exc}"}, status=400)
        retry = request.headers.get("X-Slack-Retry-Num")
        if self.once is not None and not await self.once.first_time(body, retry=retry):
            return web.Response(status=200)
        answer = await self.app.async_dispatch(await to_bolt_request(request))
        return await to_aiohttp_response(answer)

    async def start(self) -> None:
        """Deliver, sweep and remind from now on; reach Slack in the background (`link`)."""
        # Rows this worker claimed before it restarted are its own: no need to wait out the
        # claim (with a stable SIGNOFF_WORKER_ID).
        await self.deliveries.release_outbox_claims(self.sender.owner)
        if self.reconciler is not None:
            self.reconciler.suspect_known_channels()
            self.reconciler.start()
        self.sender.start()
        self.page_reminders.start()
        self.link.start()

    async def stop(self) -> None:
        """Stop talking to Slack (at shutdown, or once the worker steps aside; once)."""
        if self.stopped:
            return
        self.stopped = True
        await self.link.stop()
        self.page_reminders.stop()
        await self.sender.stop()
        if self.reconciler is not None:
            await self.reconciler.stop()


def check_slack_settings(settings: Settings) -> None:
    """Refuse to start a Slack process without what Slack needs, naming the variable."""
    if settings.api.only:
        return
    hint = "(or set SIGNOFF_API_ONLY=1 to serve only the HTTP API)"
    if not secret(settings.slack.bot_token):
        raise ConfigError(f"SLACK_BOT_TOKEN is not set: the bot cannot post to Slack {hint}")
    if not secret(settings.slack.signing_secret) and not secret(settings.slack.app_token):
        raise ConfigError(
            "SLACK_SIGNING_SECRET (HTTP) or SLACK_APP_TOKEN (Socket Mode) is not set: Slack "
            f"cannot reach the bot {hint}"
        )


def bolt_app(
    token: str, *, base_url: str | None, signing_secret: str | None, link: SlackLink | None
) -> AsyncApp:
    """The bolt app, which never calls Slack before a listener acks: bolt would ask
    `auth.test` on the first request (and wait on it while Slack hangs); here who the bot is
    comes from what the link learnt, and the request's client gets the bot token."""

    async def authorize(enterprise_id: str | None, team_id: str | None) -> AuthorizeResult:
        identity = link.identity if link is not None else {}
        return AuthorizeResult(
            enterprise_id=enterprise_id,
            team_id=team_id,
            bot_token=token,
            bot_id=identity.get("bot_id"),
            bot_user_id=identity.get("user_id"),
        )

    quiet_unused_token_notice()
    return AsyncApp(
        # Bolt names its loggers after the file that made the app; named here, it does not
        # read the source of every frame on the call stack to find it (0.2 s of start-up).
        name="app.py",
        # Without a token of its own, bolt takes the bot's from `authorize`.
        client=web_client("", base_url=base_url),
        authorize=authorize,
        signing_secret=signing_secret or "",
        request_verification_enabled=signing_secret is not None,
        raise_error_for_unhandled_request=False,
        # Listeners return right after acking (their slow part is spawned), so answer when
        # they return instead of polling every 10 ms for the ack.
        process_before_response=True,
    )


def slack_surface(
    settings: Settings,
    rt: Runtime,
    background: Background,
    nudge: OutboxNudge,
    *,
    on_fatal: Callable[[ConfigError], None] = lambda exc: None,
) -> SlackSurface:
    """`on_fatal`: told when Slack refuses what only a person can fix (the server stops)."""
    token = secret(settings.slack.bot_token) or ""
    base_url = settings.slack.api_url
    client = web_client(token, base_url=base_url)
    signing_secret = secret(settings.slack.signing_secret) or None
    app_token = secret(settings.slack.app_token)
    link = SlackLink(
        web_client(token, base_url=base_url, idempotent_only=True, timeout=LINK_TIMEOUT),
        configured(settings.slack.approvals_channel, settings.slack.oncall_channel, rt.policies),
        None,
        on_fatal=on_fatal,
    )
    app = bolt_app(token, base_url=base_url, signing_secret=signing_secret, link=link)
    once = Once(rt.deliveries)
    if app_token:
        link.socket = CheckedSocketModeHandler(
            app, app_token, once=once, logger=socket_logger(), web_client=client
        )
    homes = HomeTabs(rt, per_minute=settings.slack.home_publish_per_minute)
    listeners.register(app, rt, background, homes=homes, page_url=settings.web.public_url)
    app.error(listeners.one_line_error)
    # Posting may not be retried blindly (see `web_client`), and a call must end well
    # before the sender's claim on its row lapses and another sender takes the row.
    claim = settings.workers.outbox_claim_seconds
    timing = Timing(claim)
    poster = web_client(
        token,
        base_url=base_url,
        idempotent_only=True,
        timeout=max(1, int(timing.post_timeout)),
    )
    outcomes = Outcomes(timing, clock=lambda: rt.clock().timestamp())
    delivery = SlackDelivery(
        poster,
        rt.queries,
        rt.deliveries,
        policies=rt.policies,
        channels=Channels(
            approvals=settings.slack.approvals_channel, oncall=settings.slack.oncall_channel
        ),
        tool_of=rt.tool_for,
        find_run=rt.find_run,
        resolvable_pages=bool(settings.slack.page_resolvers),
        similar=bool(settings.runtime.learned_rules.writers),
        outcomes=outcomes,
        clock=rt.clock,
        after_row=homes.on_row,
        currency=rt.spend.currency,
    )
    every = max(0.5, timing.settle / 3)
    reconciler = Reconciler(client, delivery, outcomes, every=every, timers=rt.scheduler)
    sender = OutboxSender(
        rt.deliveries,
        delivery,
        owner=rt.worker_id,
        timers=rt.scheduler,
        claim_for=timedelta(seconds=claim),
    )
    nudge.sender = sender
    homes.wake = sender.wake
    return SlackSurface(
        app,
        client,
        sender,
        link,
        http=signing_secret is not None,
        deliveries=rt.deliveries,
        page_reminders=PageReminders(
            rt.deliveries, settings.slack.page_remind_every, rt.scheduler, sender.wake
        ),
        verifier=inbound.Signature(signing_secret) if signing_secret else None,
        once=once,
        reconciler=reconciler,
    )
