"""Who is in a Slack user group: `usergroups.users.list`, cached, for approver checks."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import KW_ONLY
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncConnectionErrorRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import AsyncServerErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

log = logging.getLogger("signoff.directory")


def web_client(
    token: str, *, base_url: str | None = None, idempotent_only: bool = False, timeout: int = 30
) -> AsyncWebClient:
    """A Web API client that retries rate limits, 5xx answers and dropped connections.

    `idempotent_only`: retry only what Slack refused before acting (429). A 5xx or a
    dropped connection may come after a post landed, and Slack has no idempotency key, so
    the outbox retries those itself, looking for the earlier post first.
    """
    # The outbox backs off for longer itself; in place, wait out one Retry-After at most.
    retries = 1 if idempotent_only else 5
    handlers: list[Any] = [AsyncRateLimitErrorRetryHandler(max_retry_count=retries)]
    if not idempotent_only:
        handlers += [
            AsyncServerErrorRetryHandler(max_retry_count=3),
            AsyncConnectionErrorRetryHandler(max_retry_count=3),
        ]
    return AsyncWebClient(
        token=token,
        base_url=base_url or "https://slack.com/api/",
        timeout=timeout,
        retry_handlers=handlers,
    )


@dataclass(eq=False)
class SlackDirectory:
    """Implements `runtime.approvals.policy.Directory` with Slack user groups.

    Members are cached for `ttl` seconds. If Slack cannot be asked, a stale answer is used
    when there is one; otherwise the group counts as empty, so nobody is let in by mistake.
    """

    client: AsyncWebClient
    _: KW_ONLY
    ttl: float = 300.0
    clock: Callable[[], float] = time.monotonic
    _cache: dict[str, tuple[float, frozenset[str]]] = field(default_factory=dict, init=False)

    async def members(self, group_id: str) -> frozenset[str]:
        cached = self._cache.get(group_id)
        if cached is not None and self.clock() - cached[0] < self.ttl:
            return cached[1]
        try:
            response = await self.client.usergroups_users_list(usergroup=group_id)
        except (SlackApiError, aiohttp.ClientError, TimeoutError) as exc:
            log.warning("usergroups.users.list %s failed: %s", group_id, exc)
            return cached[1] if cached else frozenset()
        members = frozenset(response.get("users") or [])
        self._cache[group_id] = (self.clock(), members)
        return members
