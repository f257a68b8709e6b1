"""Posting to Slack at most once per record, within a row's claim.

Slack has no idempotency key, so a post that an earlier try may have made (`item.attempts >
1` and its outcome unknown, see `bot.slack.outcomes`) is looked for first, by the `metadata`
every message carries, once Slack could have finished it, before it is sent again. A post
starts only early in its row's claim and ends well before the claim does (`Timing`), so a
sender whose claim lapsed never posts. A card is recorded once: a sender that finds another
card already on the record deletes its own. What each row means (which card, which note) is
`bot.slack.delivery`'s; this module only sends, finds and records.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import re
from collections.abc import AsyncGenerator
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.outbox import Attempt
from bot.outbox import RetryAt
from bot.slack.outcomes import Outcomes
from runtime.deliveries import Deliveries
from runtime.queries import Queries
from runtime.records import Approval
from runtime.records import Delivery
from runtime.records import OutboxItem
from runtime.records import Page

log = logging.getLogger("signoff.slack")

# Answers that no retry will change (the message itself is wrong, or gone): given up.
PERMANENT = frozenset(
    {
        "invalid_blocks",
        "msg_too_long",
        "no_text",
        "too_many_attachments",
        "invalid_arguments",
        "message_not_found",
        "cant_update_message",
        "edit_window_closed",
    }
)
# Answers a person fixes (a setting, an invitation): retried, loudly, until they do.
MISCONFIGURED = frozenset(
    {
        "channel_not_found",
        "not_in_channel",
        "is_archived",
        "invalid_auth",
        "not_authed",
        "account_inactive",
        "token_revoked",
        "missing_scope",
    }
)
HINTS = {
    "channel_not_found": "check the channel id (C…, not #name)",
    "not_in_channel": "invite the bot to the channel (/invite @Signoff)",
    "is_archived": "the channel is archived; choose another",
    "invalid_auth": "check SLACK_BOT_TOKEN",
    "not_authed": "check SLACK_BOT_TOKEN",
    "account_inactive": "the app was uninstalled or its token revoked",
    "token_revoked": "the app was uninstalled or its token revoked",
    "missing_scope": "reinstall the app from manifest.yml",
}
SLACK_TS = re.compile(r"[0-9]{1,12}\.[0-9]{1,9}")
UNNAMED_WAIT = 1.0
"""Seconds before a post Slack took without naming it is looked up (history may lag)."""
LOOKBACK = 200  # messages in one page of history searched for an earlier post
FIND_PAGES = 5  # pages of history searched at most
ATTEMPT: contextvars.ContextVar[Attempt] = contextvars.ContextVar("attempt")
"""The claim the row being delivered (in this task) is under."""


class OncePoster:
    """Posts, threads and records messages for one outbox row at a time (`ATTEMPT`)."""

    client: AsyncWebClient
    queries: Queries
    deliveries: Deliveries
    outcomes: Outcomes
    self_removed: int
    """Posts this process deleted because the record already had its card."""

    async def _post(
        self, channel: str, message: dict[str, Any], *, thread_ts: str | None = None
    ) -> str | None:
        """Post within the row's claim: not at all late in it (the fence), and never past
        its budget; the outcome (posted, not sent, unknown) goes to `outcomes`. The
        message's ts, or None when Slack said `ok` without a real one (it is looked up)."""
        attempt = ATTEMPT.get()
        if not attempt.may_start_post():
            raise RetryAt(0.0, "too late in its claim to post; a new claim posts")
        item_id = attempt.item.id
        self.outcomes.posting(item_id)
        post = self.client.chat_postMessage(
            channel=channel,
            text=message["text"],
            blocks=message.get("blocks"),
            metadata=message.get("metadata"),
            thread_ts=thread_ts,
            unfurl_links=False,
            unfurl_media=False,
        )
        try:
            response = await asyncio.wait_for(post, attempt.post_budget())
        except SlackApiError as exc:
            if exc.response.status_code < 500:  # refused before acting: 429, ok=false
                self.outcomes.not_sent(item_id)
            else:
                self.outcomes.unknown(item_id, channel, thread_ts)
            raise
        except aiohttp.ClientConnectorError:  # never reached Slack
            self.outcomes.not_sent(item_id)
            raise
        except BaseException:  # a timeout, a dropped answer, a cancelled task: it may land
            self.outcomes.unknown(item_id, channel, thread_ts)
            raise
        ts = slack_ts(response.get("ts"))
        if ts is None or not response.get("channel"):
            # Slack took it (`ok`) without saying which message it is: it is there, and is
            # found by its metadata like a post whose answer was lost.
            self.outcomes.landed_unnamed(item_id, channel, thread_ts)
            log.warning(
                "slack: chat.postMessage answered ok without a usable ts/channel (ts %r, "
                "channel %r); looking the message up by its metadata",
                response.get("ts"),
                response.get("channel"),
            )
            return None
        self.outcomes.posted(item_id)
        return ts

    # an approval's card and a page's message: one top-level post each, named by its record's
    # id under `key` ("approval_id" or "page_id") in the message's metadata

    async def _post_once(
        self,
        item: OutboxItem,
        channel: str,
        message: dict[str, Any],
        key: str,
        subject_id: str,
        *,
        since: Approval | None = None,
    ) -> None:
        """Post the message (unless an earlier try may have landed it and it is found) and
        record its ts; if another sender recorded one first, this post is removed."""
        ts = await self._find(item, channel, None, key, subject_id, since=since)
        if ts is None:
            ts = await self._post(channel, message)
        if ts is None:
            raise RetryAt(UNNAMED_WAIT, "posted, but Slack did not say its ts; looked up next")
        _, recorded = await self.message_of(key, subject_id)
        if recorded and recorded != ts:
            await self._delete_own(channel, ts, f"{key.removesuffix('_id')} {subject_id}", recorded)
            return
        await self.record_message(key, subject_id, channel, ts)

    async def message_of(self, key: str, subject_id: str) -> tuple[str | None, str | None]:
        """Where the record says its message is: (channel, ts)."""
        record: Approval | Page = (
            await self.queries.approval(subject_id)
            if key == "approval_id"
            else await self.queries.page(subject_id)
        )
        return record.channel, record.message_ts

    async def record_message(self, key: str, subject_id: str, channel: str, ts: str) -> None:
        """Put the message on the record, delivered: only a real ts (never "" or "None")."""
        if slack_ts(ts) is None or not channel:
            raise ValueError(f"not a Slack message to record: channel {channel!r}, ts {ts!r}")
        record = (
            self.deliveries.set_approval_message
            if key == "approval_id"
            else self.deliveries.set_page_message
        )
        await record(subject_id, channel=channel, ts=ts, delivery=Delivery.DELIVERED)

    async def _delete_own(self, channel: str, ts: str, what: str, recorded: str) -> None:
        """Another sender recorded this card first: this post is a duplicate; remove it."""
        log.info("%s already has its message %s; deleting this post %s", what, recorded, ts)
        await delete_message(self.client, channel, ts)
        self.self_removed += 1

    async def _reply_once(
        self,
        item: OutboxItem,
        channel: str,
        thread_ts: str,
        message: dict[str, Any],
        note_id: str,
    ) -> None:
        """A reply in the thread, once, even if an earlier try may have landed."""
        if await self._find(item, channel, thread_ts, "note_id", note_id):
            return
        message = {**message, "metadata": _metadata("signoff_note", note_id=note_id)}
        await self._post(channel, message, thread_ts=thread_ts)

    async def _find(
        self,
        item: OutboxItem,
        channel: str,
        thread_ts: str | None,
        key: str,
        value: str,
        *,
        since: Approval | None = None,
    ) -> str | None:
        """The ts of a message an earlier try of `item` posted with this metadata value, if
        one may have landed (`Outcomes.look_first`) and it is found."""
        if item.attempts <= 1 or not self.outcomes.look_first(item.id):
            return None
        oldest = str(since.created_at.timestamp() - 60) if since else None
        # An earlier try may still land after this look (a dead worker's hung post): the
        # reconciler sweeps here once more for a while, and deletes the younger of two.
        self.outcomes.suspect(channel, thread_ts, since=float(oldest or self.outcomes.since()))
        found = history(self.client, channel, thread_ts, oldest=oldest, pages=FIND_PAGES)
        async with contextlib.aclosing(found) as messages:
            async for message in messages:
                payload = (message.get("metadata") or {}).get("event_payload") or {}
                if payload.get(key) == value:
                    log.info("found an earlier post of %s %s; not posting it again", key, value)
                    return str(message["ts"])
        return None


async def history(
    client: AsyncWebClient, channel: str, thread_ts: str | None, *, oldest: str | None, pages: int
) -> AsyncGenerator[dict[str, Any]]:
    """The messages of a thread (`thread_ts`) or of a channel since `oldest`, with their
    metadata, `LOOKBACK` a page for at most `pages` pages."""
    cursor = None
    for _ in range(pages):
        page: dict[str, Any] = {
            "channel": channel,
            "include_all_metadata": True,
            "limit": LOOKBACK,
            "cursor": cursor,
        }
        response = await (
            client.conversations_replies(ts=thread_ts, **page)
            if thread_ts
            else client.conversations_history(oldest=oldest, **page)
        )
        for message in response.get("messages") or []:
            yield message
        cursor = (response.get("response_metadata") or {}).get("next_cursor")
        if not cursor:
            return


async def delete_message(client: AsyncWebClient, channel: str, ts: str) -> None:
    """`chat.delete`; a message already gone is as good as deleted."""
    try:
        await client.chat_delete(channel=channel, ts=ts)
    except SlackApiError as exc:
        if slack_error(exc) != "message_not_found":
            raise


def slack_ts(value: object) -> str | None:
    """A message's ts as Slack gives it (`"1712345678.123456"`); None for anything else: a
    missing one, `""`, null, `"None"`."""
    return value if isinstance(value, str) and SLACK_TS.fullmatch(value) else None


def slack_error(exc: SlackApiError) -> str:
    """The Web API's error code; a non-JSON answer (a wrong SLACK_API_URL) has none."""
    data = exc.response.data
    if isinstance(data, dict):
        return str(data.get("error", ""))
    return f"http_{exc.response.status_code}"


def _metadata(event_type: str, **payload: str) -> dict[str, Any]:
    return {"event_type": event_type, "event_payload": payload}
