"""The link to Slack, made in the background: `signoff serve` listens, is ready, takes
clicks and queues cards whether or not Slack answers, and never waits on Slack to start or
to stop.

In order: `auth.test` says who the bot is, then the configured channels are checked
(`bot.slack.channels`), then Socket Mode connects when it is used. Each failed attempt is
one line (no traceback) and the next waits longer (1 s doubling to a minute). What only a
person can fix (a refused token, a channel set by name, a URL that is not Slack's Web API)
is a `ConfigError` handed to `on_fatal`: the server stops with that one line.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Awaitable
from collections.abc import Callable
from dataclasses import KW_ONLY
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import aiohttp
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.outbox import backoff
from bot.settings import ConfigError
from bot.slack.channels import check_channels
from bot.slack.posting import MISCONFIGURED
from bot.slack.posting import slack_error

log = logging.getLogger("signoff.slack")

RETRY_CAP = 60.0
"""Seconds between attempts at most, once Slack has not answered for a while."""
CONNECT_WITHIN = 20.0
"""Seconds one Socket Mode connection attempt may take (the URL, then the WebSocket)."""
CLOSE_WITHIN = 2.0
"""Seconds closing the Socket Mode connection may take on the way out."""
SOCKET_LOGGER = "signoff.slack.socket"


class OneLine(logging.Filter):
    """The Socket Mode client logs a failed (re)connection with its traceback every few
    seconds while Slack is away: keep the line, drop the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info, record.exc_text = None, None
        return True


def socket_logger() -> logging.Logger:
    """The Socket Mode client's logger: warnings and errors, one line each."""
    logger = logging.getLogger(SOCKET_LOGGER)
    logger.setLevel(logging.WARNING)
    if not any(isinstance(f, OneLine) for f in logger.filters):
        logger.addFilter(OneLine())
    return logger


@dataclass(eq=False)
class SlackLink:
    client: AsyncWebClient
    """Asks Slack once per attempt (no retries in place: each attempt is one line)."""
    channels: dict[str, str]
    socket: AsyncSocketModeHandler | None
    _: KW_ONLY
    on_fatal: Callable[[ConfigError], None]
    jitter: Callable[[float, float], float] = random.uniform
    identity: dict[str, Any] = field(default_factory=dict)
    """What `auth.test` answered (team, bot user and bot ids), once it has."""
    connected: bool = field(default=False, init=False)
    _task: asyncio.Task[None] | None = field(default=None, init=False)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="slack link")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self.socket is not None:
            try:
                await asyncio.wait_for(self.socket.close_async(), CLOSE_WITHIN)  # type: ignore[no-untyped-call]  # bolt's is unannotated
            except Exception as exc:  # leaving anyway: the connection dies with the process
                log.info("slack: Socket Mode did not close cleanly (%r)", exc)

    async def _run(self) -> None:
        try:
            await self._until_done("auth.test", self._who_am_i)
            await check_channels(self.client, self.channels)
            if (socket := self.socket) is not None:
                await self._until_done("Socket Mode", lambda: _connect_socket(socket))
                log.info("slack: connected over Socket Mode")
            self.connected = True
        except ConfigError as exc:
            self.on_fatal(exc)

    async def _until_done(self, what: str, attempt: Callable[[], Awaitable[None]]) -> None:
        """`attempt` until it succeeds: one line per failure, then a longer wait."""
        failures = 0
        while True:
            try:
                await attempt()
                return
            except (SlackApiError, aiohttp.ClientError, TimeoutError, OSError) as exc:
                failures += 1
                wait = backoff(failures, self.jitter, cap=RETRY_CAP)
                log.warning(
                    "slack: %s failed (attempt %d: %s); cards wait; trying again in %.0f s",
                    what,
                    failures,
                    _why(exc),
                    wait,
                )
            await asyncio.sleep(wait)

    async def _who_am_i(self) -> None:
        """`auth.test`; a refused token or a URL that is not the Web API is fatal."""
        try:
            identity = await self.client.auth_test()
        except SlackApiError as exc:
            error = slack_error(exc)
            if error.startswith("http_") and exc.response.status_code < 500:
                raise ConfigError(
                    f"SLACK_API_URL {self.client.base_url!r} does not answer as Slack's Web API "
                    f"({error.replace('_', ' ')} for auth.test); it ends with /api/"
                ) from None
            if error in MISCONFIGURED:
                raise ConfigError(f"SLACK_BOT_TOKEN was refused by Slack ({error})") from None
            raise
        self.identity = dict(identity.data) if isinstance(identity.data, dict) else {}
        log.info("slack: connected as %s in %s", identity.get("user"), identity.get("team"))


async def _connect_socket(socket: AsyncSocketModeHandler) -> None:
    """One attempt: a fresh WebSocket URL, then the connection (the client reconnects by
    itself afterwards, one line per failure)."""
    connection = socket.client  # the Socket Mode client (its Web API calls: apps.connections)
    try:
        connection.wss_uri = await connection.issue_new_wss_url()
    except SlackApiError as exc:
        error = slack_error(exc)
        if error in (*MISCONFIGURED, "not_allowed_token_type"):
            raise ConfigError(f"SLACK_APP_TOKEN was refused by Slack ({error})") from None
        raise
    await asyncio.wait_for(connection.connect(), CONNECT_WITHIN)  # type: ignore[no-untyped-call]  # the SDK's is unannotated


def _why(exc: BaseException) -> str:
    """A failure in a few words: Slack's error code, or what the connection said."""
    if isinstance(exc, SlackApiError):
        return slack_error(exc)
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]
