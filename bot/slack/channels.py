"""The channels a configuration names, checked with Slack at start-up.

Cards are posted, updated and looked for by channel id (Slack answers `chat.update` and
`conversations.history` by id, and `#name` only ever works for posting), so a channel set by
name would fail card by card later: `signoff serve` stops instead, with one line that says
which setting and what to put there (the id Slack has for that name, when the bot sees it).
An id Slack does not know is warned about loudly, with the fix, at start-up; its cards wait in
the outbox, saying so, until it is fixed (a channel can also go away while the bot runs)."""

from __future__ import annotations

import logging
from collections.abc import Mapping

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.policy_ids import CHANNEL_ID
from bot.settings import ConfigError
from bot.slack.posting import slack_error
from runtime.approvals import Policies

log = logging.getLogger("signoff.slack")

PAGES = 20
"""`conversations.list` pages read to find a channel by name (200 channels each)."""


def configured(approvals: str | None, oncall: str | None, policies: Policies) -> dict[str, str]:
    """Each channel the configuration sets, by where it is set."""
    found = {"SIGNOFF_APPROVALS_CHANNEL": approvals, "SIGNOFF_ONCALL_CHANNEL": oncall}
    found["policies.default.channel"] = policies.default.channel
    for tool, policy in policies.tools.items():
        found[f"policies.tools.{tool}.channel"] = policy.channel
    return {where: channel for where, channel in found.items() if channel}


async def check_channels(client: AsyncWebClient, named: Mapping[str, str]) -> None:
    """A channel given by name stops the start (`ConfigError`); an id Slack does not know,
    or Slack not answering, is warned about (cards wait for it anyway)."""
    checked: set[str] = set()
    for where, channel in named.items():
        if channel in checked:
            continue
        checked.add(channel)
        if CHANNEL_ID.fullmatch(channel):
            await _check_id(client, where, channel)
        else:
            await _refuse_name(client, where, channel)


async def _check_id(client: AsyncWebClient, where: str, channel: str) -> None:
    try:
        await client.conversations_info(channel=channel)
    except SlackApiError as exc:
        error = slack_error(exc)
        if error == "channel_not_found":
            log.warning(
                "slack: %s %r: Slack has no channel with that id the bot can see "
                "(channel_not_found); its cards wait until it is fixed: copy the id from the "
                "channel's details in Slack, and invite the bot to a private channel "
                "(/invite @Signoff)",
                where,
                channel,
            )
            return
        log.warning(
            "slack: could not check %s %r (%s); cards will say if it is wrong",
            where,
            channel,
            error,
        )
    except (aiohttp.ClientError, TimeoutError) as exc:
        log.warning("slack: could not check %s %r (%r)", where, channel, exc)


async def _refuse_name(client: AsyncWebClient, where: str, channel: str) -> None:
    wanted = channel.removeprefix("#")
    try:
        found = await _id_of(client, wanted)
    except (SlackApiError, aiohttp.ClientError, TimeoutError) as exc:
        log.info("slack: could not look up #%s: %r", wanted, exc)
        found = None
    if found is not None:
        raise ConfigError(
            f"{where} {channel!r} is a channel name; Signoff needs the channel's id "
            f"(Slack answers by id): set it to {found!r}"
        )
    raise ConfigError(
        f"{where} {channel!r} is not a channel id (C…), and the bot sees no channel of that "
        "name; set the channel's id (in Slack: the channel's details, at the bottom) and "
        "invite the bot to it (/invite @Signoff)"
    )


async def _id_of(client: AsyncWebClient, name: str) -> str | None:
    cursor: str | None = None
    for _ in range(PAGES):
        answer = await client.conversations_list(
            types="public_channel,private_channel",
            exclude_archived=True,
            limit=200,
            cursor=cursor,
        )
        for found in answer.get("channels") or []:
            if found.get("name") == name:
                return str(found["id"])
        cursor = (answer.get("response_metadata") or {}).get("next_cursor") or None
        if cursor is None:
            return None
    return None
