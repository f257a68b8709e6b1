"""What a click says about the card it was on: Slack names the message (its channel and ts)
in every click on a message's button, even when its post's answer did not (an `ok` without a
usable ts). A record without a message takes it from the click, before the click's change
is made, so the card is updated after it."""

from __future__ import annotations

import logging
from typing import Any

from bot.slack.posting import slack_ts
from runtime.deliveries import Deliveries

log = logging.getLogger("signoff.slack")


def card_of(body: dict[str, Any]) -> tuple[str, str] | None:
    """(channel, ts) of the message clicked; None for a click in the Home tab or a modal."""
    container = body.get("container")
    if not isinstance(container, dict) or container.get("type") != "message":
        return None
    channel, ts = container.get("channel_id"), slack_ts(container.get("message_ts"))
    return (channel, ts) if isinstance(channel, str) and channel and ts else None


async def remember_card(
    deliveries: Deliveries, body: dict[str, Any], kind: str, subject_id: str
) -> None:
    """Record the clicked message as the approval's (`kind` "approval") or page's ("page"),
    where its record has none."""
    card = card_of(body)
    if card is None:
        return
    channel, ts = card
    if await deliveries.adopt_message(kind, subject_id, channel=channel, ts=ts):
        log.info(
            "slack: %s %s: its message %s in %s, as a click on it says",
            kind,
            subject_id,
            ts,
            channel,
        )
