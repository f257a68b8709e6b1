"""Slack's requests handled once, across every process on the database.

Slack delivers an event again when it was not answered in 3 seconds (`X-Slack-Retry-Num`,
Socket Mode's `retry_attempt`), and a proxy or a reconnecting socket may deliver anything
twice; the second delivery may reach another worker. Each request is noted under its id in
the database before it is handled (`Deliveries.first_delivery`: a unique key that expires):
an event by its `event_id`, a click, a modal or a slash command by its `trigger_id`, which
Slack makes anew for every interaction. The first delivery to note it is handled; any
other, by any process, is answered without being handled. When the database cannot be
written, this process's own memory decides (`inbound.SeenEvents`), as before.
"""

from __future__ import annotations

import logging
from typing import Any

from bot.slack.inbound import EVENT_WINDOW
from bot.slack.inbound import SeenEvents
from runtime.deliveries import Deliveries
from runtime.records import StoreError

log = logging.getLogger("signoff.slack")

PRUNE_EVERY = 600.0
"""Seconds between sweeps of notes past their hour."""


def key_of(body: dict[str, Any]) -> str | None:
    """What names one request from Slack, however often it is delivered; None when nothing
    does (a `view_closed`, `url_verification`): such a request is always handled."""
    kind = body.get("type")
    if kind == "event_callback":
        return f"slack:event:{body['event_id']}"
    trigger = body.get("trigger_id")
    if isinstance(trigger, str) and trigger:
        return f"slack:{kind if isinstance(kind, str) else 'command'}:{trigger}"
    return None


class Once:
    def __init__(self, deliveries: Deliveries, *, keep_for: float = EVENT_WINDOW) -> None:
        self.deliveries = deliveries
        self.keep_for = keep_for
        self.local = SeenEvents(keep_for)

    async def first_time(self, body: dict[str, Any], *, retry: str | None = None) -> bool:
        """Whether to handle this request: False when a delivery of it, to this process or
        another, was handled already (logged, with Slack's retry number)."""
        key = key_of(body)
        if key is None:
            return True
        try:
            first = await self.deliveries.first_delivery(key, keep_for=self.keep_for)
        except (StoreError, OSError) as exc:
            log.warning(
                "slack: could not note %s in the database (%r); this process's memory decides",
                key,
                exc,
            )
            first = self.local.first_time(key)
        if not first:
            log.info("slack: %s again (retry %s): already handled", key, retry or "?")
        return first

    async def prune(self) -> None:
        await self.deliveries.forget_deliveries()
