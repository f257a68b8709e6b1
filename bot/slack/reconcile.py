"""The reconciler: wherever a duplicate may be (a channel or thread `Outcomes` marked
suspect: a post with an unknown outcome, a restart), sweep Slack's history and converge to
one message per approval, page and note. Of two messages with the same metadata the older
is kept (and put on the record, re-rendered as the record is now) and the younger deleted
with `chat.delete`.

Only suspects are swept, each for a while (`Outcomes.suspect_for`), every `every` seconds
(a job on the runtime's scheduler): with Slack answering normally nothing is suspect and
nothing is swept.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import KW_ONLY
from dataclasses import dataclass
from dataclasses import field
from decimal import Decimal
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack import blocks as kit
from bot.slack.delivery import SlackDelivery
from bot.slack.outcomes import Outcomes
from bot.slack.posting import delete_message
from bot.slack.posting import history
from bot.slack.posting import slack_error
from runtime.queries import NOT_FOUND
from runtime.records import StoreError
from runtime.scheduler import Timers

log = logging.getLogger("signoff.slack")

SWEEP_JOB = "signoff-slack-sweep"
MAX_PAGES = 50  # pages of history in one sweep (10,000 messages)
NOTE_EVENT = "signoff_note"
Subject = tuple[str, str]
Message = dict[str, Any]


@dataclass(eq=False)
class Reconciler:
    client: AsyncWebClient
    delivery: SlackDelivery
    outcomes: Outcomes
    _: KW_ONLY
    every: float
    timers: Timers
    sweeps: int = field(default=0, init=False)
    removed: int = field(default=0, init=False)

    def suspect_known_channels(self) -> None:
        """After a start, a post of the process before may land late anywhere we post."""
        since = self.outcomes.since()
        for channel in (self.delivery.channels.approvals, self.delivery.channels.oncall):
            if channel:
                self.outcomes.suspect(channel, None, since=since)

    def start(self) -> None:
        self.timers.every(self.every, self.sweep_due, name=SWEEP_JOB)

    async def stop(self) -> None:
        self.timers.cancel(SWEEP_JOB)

    async def sweep_due(self) -> int:
        """Sweep every suspect that is due; how many duplicates were removed."""
        removed = 0
        for channel, thread_ts, since in self.outcomes.due():
            try:
                removed += await self.sweep(channel, thread_ts, since=since)
            except (
                SlackApiError,
                aiohttp.ClientError,
                TimeoutError,
                StoreError,
            ) as exc:
                what = slack_error(exc) if isinstance(exc, SlackApiError) else repr(exc)
                log.warning("slack: sweeping %s for duplicates failed (%s); again", channel, what)
                continue
            self.outcomes.swept(channel, thread_ts, self.every)
        return removed

    async def sweep(self, channel: str, thread_ts: str | None, *, since: float) -> int:
        """Converge each subject with more than one message in this channel (or thread)."""
        self.sweeps += 1
        groups: dict[Subject, list[Message]] = defaultdict(list)
        messages = history(self.client, channel, thread_ts, oldest=f"{since:.6f}", pages=MAX_PAGES)
        async for message in messages:
            subject = subject_of(message, top_level=thread_ts is None)
            if subject is not None and message.get("ts") != thread_ts:
                groups[subject].append(message)
        removed = 0
        for subject, found in groups.items():
            if len(found) > 1:
                ordered = sorted(found, key=lambda m: Decimal(str(m["ts"])))
                removed += await self._converge(channel, subject, ordered)
        self.removed += removed
        return removed

    async def _converge(self, channel: str, subject: Subject, ordered: list[Message]) -> int:
        keep, extra = ordered[0], ordered[1:]
        kind, subject_id = subject
        try:
            if kind in ("approval_id", "page_id"):
                await self._keep(kind, subject_id, channel, str(keep["ts"]))
        except NOT_FOUND:
            pass  # pruned: the duplicates still go
        for message in extra:
            await delete_message(self.client, channel, str(message["ts"]))
        log.info(
            "slack: %d duplicate(s) of %s %s removed from %s; kept %s",
            len(extra),
            kind,
            subject_id,
            channel,
            keep["ts"],
        )
        return len(extra)

    async def _keep(self, key: str, subject_id: str, channel: str, ts: str) -> None:
        """The kept message becomes the record's (and shows the record as it is now)."""
        if await self.delivery.message_of(key, subject_id) == (channel, ts):
            return
        await self.delivery.record_message(key, subject_id, channel, ts)
        await self.delivery.refresh(key, subject_id)


def subject_of(message: Message, *, top_level: bool) -> Subject | None:
    """What a message of ours is about, by its metadata: cards and pages at the top level,
    notes in threads."""
    metadata = message.get("metadata") or {}
    payload = metadata.get("event_payload") or {}
    kind = metadata.get("event_type")
    if top_level and kind == kit.APPROVAL_EVENT and payload.get("approval_id"):
        return ("approval_id", str(payload["approval_id"]))
    if top_level and kind == kit.PAGE_EVENT and payload.get("page_id"):
        return ("page_id", str(payload["page_id"]))
    if not top_level and kind == NOTE_EVENT and payload.get("note_id"):
        return ("note_id", str(payload["note_id"]))
    return None
