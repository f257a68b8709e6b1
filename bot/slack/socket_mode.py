"""Socket Mode through the same checks as `/slack/events`, the signature aside (the socket
is the app's own authenticated connection): every message parsed with `inbound`'s limits
(size, UTF-8, depth, digits) before anything reads it, each request's shape checked, and a
request some process already handled (a retried envelope, an event delivered again)
acknowledged without being handled twice (`bot.slack.once`). A malformed request is one log
line and is not acknowledged, as HTTP answers it 400."""

from __future__ import annotations

import asyncio
import logging
from logging import Logger
from typing import Any

from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.app.async_app import AsyncApp
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack import inbound
from bot.slack.once import Once

log = logging.getLogger("signoff.slack")
_listening: set[asyncio.Future[None]] = set()


class CheckedClient(SocketModeClient):
    """slack_sdk's client, parsing what arrives with `inbound`'s limits instead of a bare
    `json.loads`."""

    async def process_message(self) -> None:
        raw = await self.message_queue.get()
        if raw is None:
            return
        message: dict[str, Any] = {}
        if raw.startswith("{"):
            try:
                message = inbound.parse(raw.encode("utf-8", "surrogatepass"), "application/json")
            except inbound.Malformed as exc:
                log.warning("slack: refused a Socket Mode message: %s", exc)
                return
        task = asyncio.ensure_future(self.run_message_listeners(message, raw))
        _listening.add(task)  # held until done, as the event loop holds only a weak reference
        task.add_done_callback(_listening.discard)


class CheckedSocketModeHandler(AsyncSocketModeHandler):
    """bolt's Socket Mode handler with the checks HTTP requests get (see the module)."""

    def __init__(
        self,
        app: AsyncApp,
        app_token: str,
        *,
        once: Once,
        logger: Logger,
        web_client: AsyncWebClient,
    ) -> None:
        # as bolt's __init__, with the checked client
        self.app = app
        self.app_token = app_token
        self.once = once
        self.client = CheckedClient(app_token=app_token, logger=logger, web_client=web_client)
        self.client.socket_mode_request_listeners.append(self.handle)  # type: ignore[arg-type]

    async def handle(self, client: SocketModeClient, req: SocketModeRequest) -> None:  # type: ignore[override]
        body = req.payload if isinstance(req.payload, dict) else {}
        problem = inbound.shape_error(body) if body else "the payload is not an object"
        if problem is not None:
            log.warning("slack: refused a Socket Mode %s request: %s", req.type, problem)
            return
        retry = None if req.retry_attempt is None else str(req.retry_attempt)
        if not await self.once.first_time(body, retry=retry):
            await client.send_socket_mode_response(SocketModeResponse(envelope_id=req.envelope_id))
            return
        await super().handle(client, req)
