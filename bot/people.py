"""People by name where Slack shows no mentions: a modal's plain text shows `<@U0BOB>` as
written, so the modal says "@bob", looked up with `users.info` (cached) like Slack would.
Slack's listeners and `signoff people` both use it, so it belongs to neither surface."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable
from collections.abc import Iterable

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

log = logging.getLogger("signoff.slack")

MENTION = re.compile(r"<@([UW][A-Z0-9]{2,})(?:\|[^>]*)?>")
LOOKUP_WITHIN = 1.0
"""Seconds a name may take to look up: a modal's answer must reach Slack within 3."""


class Names:
    """Display names by user id, each kept for `ttl` seconds; a user Slack cannot tell us
    about is shown by id (never a guess)."""

    def __init__(self, *, ttl: float = 3600.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self.clock = clock
        self._cache: dict[str, tuple[float, str]] = {}

    async def name(self, client: AsyncWebClient, user: str) -> str:
        cached = self._cache.get(user)
        if cached is not None and self.clock() - cached[0] < self.ttl:
            return cached[1]
        try:
            answer = await asyncio.wait_for(client.users_info(user=user), LOOKUP_WITHIN)
        except (SlackApiError, aiohttp.ClientError, TimeoutError) as exc:
            log.info("slack: users.info %s failed: %s", user, exc)
            return cached[1] if cached else user
        found = answer.get("user") or {}
        profile = found.get("profile") or {}
        name = profile.get("display_name") or found.get("real_name") or found.get("name") or user
        self._cache[user] = (self.clock(), str(name))
        return str(name)

    async def plain(self, text: str, client: AsyncWebClient) -> str:
        """`text` with each `<@U…>` written as `@name`, for a plain_text field."""
        out, at = [], 0
        for match in MENTION.finditer(text):
            out += [text[at : match.start()], "@" + await self.name(client, match.group(1))]
            at = match.end()
        return "".join([*out, text[at:]])


class SlackPeople:
    """Names for other surfaces (the console): ids to display names through `users.info`."""

    def __init__(self, client: AsyncWebClient, names: Names | None = None) -> None:
        self.client = client
        self.book = names or Names()

    async def names(self, ids: Iterable[str]) -> dict[str, str]:
        wanted = [i for i in dict.fromkeys(ids) if MENTION.fullmatch(f"<@{i}>")]
        return {i: await self.book.name(self.client, i) for i in wanted}
