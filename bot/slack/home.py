"""The App Home tab: each person's own view, kept current through the outbox.

A person's Home shows what they can act on (approvals they may decide, pages they may
settle), then their own requests and their recent decisions, each with its state and age,
and nothing else. A change (a decision, a vote, a reminder or an escalation, a page opened or
acknowledged) queues a `home_stale` outbox row for each person it concerns; the delivery of
the change's own row queues them, so a crash before they are queued delivers that row again.
The store keeps at most one row waiting per person, so a burst of changes costs each person
one publish, and publishes are paced under `views.publish`'s rate (Slack's Tier 4, 100+ a
minute per workspace): a row over the pace, or answered 429, is tried again when the pace
(or `Retry-After`) allows, not counted as a failure.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from collections.abc import Iterable
from datetime import datetime
from datetime import timedelta
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot import batches
from bot.outbox import RetryAt
from bot.slack import away_view
from bot.slack import home_view
from bot.slack.posting import slack_error
from runtime import Actor
from runtime import Permission
from runtime import Runtime
from runtime.approvals import Policy
from runtime.records import Approval
from runtime.records import ApprovalState
from runtime.records import OutboxItem
from runtime.records import Page
from runtime.records import Run

SUBJECT = "home:"
"""Outbox subjects of Home rows: `home:U0BOB` (never an approval's, page's or run's id)."""
PUBLISH_PER_MINUTE = 80.0
"""Below Slack's Tier 4 (100+ a minute) for `views.publish`, leaving room for the Homes
published when people open the tab."""
BURST = 3.0
"""Fewer than Slack's own burst: calls paced here reach Slack a little jittered."""
SHORT_WAIT = 0.5
"""A wait for the pace this short is slept; a longer one gives the row back (`RetryAt`)."""
RECENT = timedelta(days=30)
"""How far back a Home lists a person's own requests and decisions."""
READ_LIMIT = 200
"""At most this many of a person's own requests and decisions are read for their Home."""
APPROVAL_TOPICS = frozenset(
    {"approval_requested", "approval_decided", "approval_voted", "approval_reminded"}
)
PAGE_TOPICS = frozenset({"page_opened", "page_acknowledged"})

Clock = Callable[[], float]


class Pace:
    """A token bucket: `per_minute` calls a minute, `burst` at once."""

    def __init__(self, per_minute: float, *, burst: float = BURST, clock: Clock = time.monotonic):
        self.rate = per_minute / 60.0
        self.burst = burst
        self.clock = clock
        self._tokens = burst
        self._at = clock()

    def wait(self) -> float:
        """0 and one call taken when a call may go now; else the seconds until one may."""
        now = self.clock()
        self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate)
        self._at = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return 0.0
        return (1.0 - self._tokens) / self.rate

    def take(self) -> None:
        """A call that goes now whatever the pace (a person is looking): counted all the same."""
        if self.wait() > 0:
            self._tokens -= 1.0

    def hold(self, seconds: float) -> None:
        """Slack said to wait (`Retry-After`): no call until then."""
        self._tokens = min(self._tokens, 1.0 - seconds * self.rate)


def subject_of(user: str) -> str:
    return SUBJECT + user


def user_of(subject: str) -> str:
    return subject.removeprefix(SUBJECT)


class HomeTabs:
    """Who a change concerns, what their Home shows, and publishing it paced."""

    def __init__(
        self,
        rt: Runtime,
        *,
        per_minute: float = PUBLISH_PER_MINUTE,
    ) -> None:
        self.rt = rt
        self.resolvers = rt.access.resolvers
        self.pace = Pace(per_minute, clock=lambda: rt.clock().timestamp())
        self.wake: Callable[[], None] = lambda: None
        """Tells the outbox sender rows were queued (set once the sender exists)."""
        self.viewers: set[str] = set()
        """People whose Home this process published: an open policy's approval concerns them
        (anyone may decide it); anyone else's Home is fresh when they next open it."""
        self._one_at_a_time = asyncio.Lock()

    # who a change concerns

    async def concerned_by_approval(self, approval: Approval) -> set[str]:
        policy = self.rt.policy_of(approval)
        people = {approval.requested_by, approval.decided_by}
        people |= set(await self.rt.queries.votes(approval.id))
        people |= await self._people(_deciders(policy))
        if not policy.approvers:
            people |= self.viewers
        return {p for p in people if p}

    async def concerned_by_page(self, page: Page) -> set[str]:
        run = await self.rt.find_run(page.run_id)
        return {p for p in {*self.resolvers, page.acknowledged_by, run and run.requested_by} if p}

    async def _people(self, ids: Iterable[str]) -> set[str]:
        found: set[str] = set()
        for who in ids:
            if who.startswith("S"):
                found |= await self.rt.directory.members(who)
            else:
                found.add(who)
        return found

    # the view

    async def view(self, user: str, *, notice: str | None = None) -> dict[str, Any]:
        """What concerns `user` only, each read bounded: the pending approvals they may
        decide (selected and counted in the store, longest-waiting first), their own recent
        requests and decisions, and the open pages they may settle or that are about their
        runs."""
        now = self.rt.clock()
        # more than the section shows: the "decide together" buttons count up to a batch
        limit = max(home_view.SECTION, batches.MAX_BATCH)
        pending = await self.rt.queries.pending_for(user, self.rt.directory, limit=limit)
        absence = away_view.Absence.of(await self.rt.away(), user)
        covered = await self._delegated(user, absence, limit, known=pending.approvals)
        theirs = await self.rt.queries.approvals_of_person(
            user, since=now - RECENT, limit=READ_LIMIT
        )
        mine = [a for a in theirs if a.requested_by == user]
        decided = sorted(
            (a for a in theirs if a.decided_by == user and a.state != ApprovalState.PENDING),
            key=_decided,
            reverse=True,
        )
        resolver = user in self.resolvers
        pages = await self.rt.queries.open_pages_for(
            None if resolver else user, limit=home_view.SECTION + 1
        )
        return home_view.home_view(
            pending=sorted([*pending.approvals, *covered], key=lambda a: (a.created_at, a.id)),
            waiting=pending.waiting + len(covered),
            pages=pages,
            requests=mine,
            runs=await self._runs_of(mine[: home_view.SECTION]),
            decisions=decided,
            now=now,
            resolver=resolver,
            notice=notice,
            absence=absence,
        )

    async def _delegated(
        self, user: str, absence: away_view.Absence, limit: int, *, known: Iterable[Approval]
    ) -> list[Approval]:
        """The pending approvals of the people `user` decides for that the permission table
        lets them decide (what names those people directly; never a group's), beyond
        `known`."""
        seen = {a.id for a in known}
        found: list[Approval] = []
        me = Actor.of_person(user)
        for each in absence.covering:
            theirs = await self.rt.queries.pending_for(each.person, self.rt.directory, limit=limit)
            for approval in theirs.approvals:
                if approval.id in seen:
                    continue
                if await self.rt.may(me, Permission.DECIDE, approval):
                    seen.add(approval.id)
                    found.append(approval)
        return found

    async def _runs_of(self, approvals: Iterable[Approval]) -> dict[str, Run]:
        """The runs of the requests a Home shows, by id: each row says how its run ended."""
        runs = [await self.rt.find_run(i) for i in {a.run_id for a in approvals if a.run_id}]
        return {run.id: run for run in runs if run is not None}

    # the outbox

    async def on_row(self, item: OutboxItem, client: AsyncWebClient) -> None:
        """After an outbox row's own delivery: publish a Home, or queue the Homes it changes."""
        if item.topic == "home_stale":
            await self.publish(client, user_of(item.subject_id))
            return
        if item.topic in APPROVAL_TOPICS:
            people = await self.concerned_by_approval(
                await self.rt.queries.approval(item.subject_id)
            )
        elif item.topic in PAGE_TOPICS:
            people = await self.concerned_by_page(await self.rt.queries.page(item.subject_id))
        elif item.topic == "run_finished":  # their requests say how the run ended
            approvals = await self.rt.queries.approvals(run_id=item.subject_id)
            people = {a.requested_by for a in approvals if a.requested_by}
        else:
            return
        if await self.rt.deliveries.queue_home_refresh([subject_of(p) for p in sorted(people)]):
            self.wake()

    # publishing

    async def publish(self, client: AsyncWebClient, user: str) -> None:
        """Publish the person's Home as it is now, within the pace (else `RetryAt`).

        One publish is in flight at a time and its pace is taken just before its call, after
        the previous call was answered: a call then reaches Slack after the one before it did,
        so however the calls are delayed on their way, Slack sees at most one more in any
        window than the pace let go (`BURST` + 1 at once, which Slack's burst allows), and
        never a faster rate."""
        async with self._one_at_a_time:
            view = await self.view(user)
            wait = self.pace.wait()
            if wait > SHORT_WAIT:
                raise RetryAt(wait, "views.publish paced")
            if wait > 0:
                await asyncio.sleep(wait)
                if self.pace.wait() > 0:
                    raise RetryAt(wait, "views.publish paced")
            try:
                await self._call(client, user, view)
            except SlackApiError as exc:
                if slack_error(exc) != "ratelimited":
                    raise
                raise RetryAt(retry_after(exc), "ratelimited") from exc
        self.viewers.add(user)

    async def opened(self, client: AsyncWebClient, user: str) -> None:
        """The person opened the tab: publish now (Slack shows the last view until then)."""
        async with self._one_at_a_time:
            await self._now(client, user, await self.view(user))
        self.viewers.add(user)

    async def tell(self, client: AsyncWebClient, user: str, text: str) -> None:
        """A refusal from a Home button, shown at the top of the person's Home."""
        async with self._one_at_a_time:
            await self._now(client, user, await self.view(user, notice=text))

    async def _now(self, client: AsyncWebClient, user: str, view: dict[str, Any]) -> None:
        """A person is looking: wait out a short pace, else go anyway (it is one call), so
        it is counted in the pace the outbox's publishes keep to."""
        wait = self.pace.wait()
        if wait > 0:
            await asyncio.sleep(min(wait, SHORT_WAIT))
            self.pace.take()
        await self._call(client, user, view)

    async def _call(self, client: AsyncWebClient, user: str, view: dict[str, Any]) -> None:
        """`views.publish`; a 429 holds every publish until its `Retry-After` has passed."""
        try:
            await client.views_publish(user_id=user, view=view)
        except SlackApiError as exc:
            if slack_error(exc) == "ratelimited":
                self.pace.hold(retry_after(exc))
            raise


def _deciders(policy: Policy) -> list[str]:
    return [*policy.approvers, *([policy.escalate_to] if policy.escalate_to else [])]


def _decided(approval: Approval) -> datetime:
    return approval.decided_at or approval.created_at


def retry_after(exc: SlackApiError) -> float:
    """The seconds a 429 says to wait (the client hands headers as values or lists)."""
    value = exc.response.headers.get("Retry-After") or exc.response.headers.get("retry-after")
    if isinstance(value, list):
        value = value[0] if value else None
    try:
        return max(float(value), 1.0) if value is not None else 1.0
    except ValueError:
        return 1.0
