"""What this process knows about the outcome of its posts, and where a duplicate may be.

Slack has no idempotency key: a post whose answer never came (a timeout, a 5xx, a dropped
connection, a kill) may have landed, may land later, or may never land. Such a post is
*unknown*; one Slack refused before acting (a 429, an `ok: false`, a refused connection) is
*not sent*. A row tried again is looked up in Slack's history first only when its earlier
try is unknown, and only once Slack could have finished it (`Timing.settle` after it
began); a row this process has no memory of (a restart, another process's claim) counts as
unknown since before this process started; one this process tried without posting is not
looked up, one it posted (and then failed after) is looked up at once. Every unknown post
marks its channel (or thread) *suspect*, for the reconciler to sweep for duplicates for a
while.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from bot.outbox import RetryAt
from bot.outbox import Timing

UNKNOWN, NOT_SENT, POSTED = "unknown", "not_sent", "posted"


@dataclass
class Suspect:
    since: float
    """Epoch seconds (Slack's `ts`): messages from here on may hold a duplicate."""
    until: float
    """Sweep until then (a late post lands within it)."""
    next_at: float
    """The next sweep."""


class Outcomes:
    """`clock` is the runtime's clock in epoch seconds (Slack's `ts` are epoch seconds)."""

    def __init__(
        self,
        timing: Timing,
        *,
        suspect_for: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.timing = timing
        self.suspect_for = suspect_for if suspect_for is not None else 4 * timing.claim
        self.clock = clock
        self.started_at = clock()
        self._posts: dict[int, tuple[str, float]] = {}
        self._seen: set[int] = set()
        self.suspects: dict[tuple[str, str | None], Suspect] = {}
        self.unknown_posts = 0
        self.lookups = 0

    # rows

    def begin(self, item_id: int, attempts: int) -> None:
        """A row is about to be delivered. Tried before, but never in this process: what
        became of those tries is unknown (they began before this process started)."""
        if item_id not in self._seen:
            self._seen.add(item_id)
            if attempts > 1:
                self._posts[item_id] = (UNKNOWN, self.started_at)

    def look_first(self, item_id: int) -> bool:
        """Whether a row tried before must be looked for in Slack before it is posted again;
        RetryAt when it is too early to tell (Slack may still be carrying out the try). A
        row this process tried without posting (it waited its turn, say) is not looked up."""
        kind, started = self._posts.get(item_id, (NOT_SENT, 0.0))
        if kind == NOT_SENT:
            return False
        if kind == POSTED:  # it landed, then the row failed: find it, now
            self.lookups += 1
            return True
        wait = started + self.timing.settle - self.clock()
        if wait > 0:
            raise RetryAt(wait, "an earlier post's outcome is unknown; looked up once it settles")
        self.lookups += 1
        return True

    def posting(self, item_id: int) -> None:
        """A post is about to go: unknown until Slack answers."""
        self._posts[item_id] = (UNKNOWN, self.clock())

    def not_sent(self, item_id: int) -> None:
        self._posts[item_id] = (NOT_SENT, self.clock())

    def unknown(self, item_id: int, channel: str, thread_ts: str | None) -> None:
        """The post's answer never came: it may be there, or land later."""
        self.unknown_posts += 1
        started = self._posts.get(item_id, (UNKNOWN, self.clock()))[1]
        self._posts[item_id] = (UNKNOWN, started)
        self.suspect(channel, thread_ts, since=started - 1)

    def posted(self, item_id: int) -> None:
        self._posts[item_id] = (POSTED, self.clock())

    def landed_unnamed(self, item_id: int, channel: str, thread_ts: str | None) -> None:
        """Slack took the post (`ok`) without saying its ts: it is there, to be looked up
        at once; should the look miss it and the row post again, the sweep removes one."""
        started = self._posts.get(item_id, (POSTED, self.clock()))[1]
        self._posts[item_id] = (POSTED, started)
        self.suspect(channel, thread_ts, since=started - 1)

    def forget(self, item_id: int) -> None:
        """The row is done: nothing about it is needed any more."""
        self._posts.pop(item_id, None)
        self._seen.discard(item_id)

    # channels

    def since(self) -> float:
        """Where a sweep of a channel starts when nothing narrower is known: as far back
        as a post still being swept for could have begun."""
        return self.clock() - self.suspect_for

    def suspect(self, channel: str, thread_ts: str | None, *, since: float) -> None:
        """Sweep this channel (or thread) for duplicates from `since` on, for a while, the
        first time once a late post could have landed."""
        now = self.clock()
        found = self.suspects.get((channel, thread_ts))
        if found is None:
            first = now + self.timing.settle
            self.suspects[(channel, thread_ts)] = Suspect(since, now + self.suspect_for, first)
        else:
            found.since = min(found.since, since)
            found.until = max(found.until, now + self.suspect_for)

    def due(self) -> list[tuple[str, str | None, float]]:
        """The (channel, thread, since) to sweep now; forgets suspects whose time is up."""
        now = self.clock()
        ready = []
        for key, found in list(self.suspects.items()):
            if found.next_at <= now:
                ready.append((*key, found.since))
                if now >= found.until:
                    del self.suspects[key]
        return ready

    def swept(self, channel: str, thread_ts: str | None, every: float) -> None:
        found = self.suspects.get((channel, thread_ts))
        if found is not None:
            found.next_at = self.clock() + every
