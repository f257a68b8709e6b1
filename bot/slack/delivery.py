"""What each outbox row means in Slack: post a card, update it, thread a note, page on-call.

Each kind of row is its own short method; posting it at most once, within the row's claim,
is `bot.slack.posting`'s (`OncePoster`). Updates (`chat.update`) render the record as it is
now, so doing one twice is harmless. An answer no retry will change gives the row up; one a
person fixes (a channel, a token) is retried, loudly, until they do.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from collections.abc import Callable
from dataclasses import KW_ONLY
from dataclasses import dataclass
from dataclasses import field
from datetime import datetime
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot import words
from bot.outbox import Attempt
from bot.outbox import Misconfigured
from bot.outbox import RetryAt
from bot.outbox import Timing
from bot.outbox import Undeliverable
from bot.outbox import WaitsItsTurn
from bot.slack import blocks as kit
from bot.slack import cards
from bot.slack import envelopes
from bot.slack import escalation
from bot.slack import page_cards
from bot.slack import rule_notes
from bot.slack import texts
from bot.slack.outcomes import Outcomes
from bot.slack.posting import ATTEMPT
from bot.slack.posting import HINTS
from bot.slack.posting import MISCONFIGURED
from bot.slack.posting import PERMANENT
from bot.slack.posting import UNNAMED_WAIT
from bot.slack.posting import OncePoster
from bot.slack.posting import slack_error
from runtime.approvals import Policies
from runtime.approvals import Policy
from runtime.approvals import duration_text
from runtime.approvals import policy_of
from runtime.approvals import slo_missed
from runtime.deliveries import Deliveries
from runtime.display import Display
from runtime.queries import NOT_FOUND
from runtime.queries import Queries
from runtime.records import Approval
from runtime.records import ApprovalState
from runtime.records import Delivery
from runtime.records import Envelope
from runtime.records import LearnedRule
from runtime.records import OutboxItem
from runtime.records import Page
from runtime.records import Run
from runtime.tools import Tool

log = logging.getLogger("signoff.slack")

ToolOf = Callable[[Approval], Awaitable[Tool | None]]
AfterRow = Callable[[OutboxItem, AsyncWebClient], Awaitable[None]]
"""Run after each row's own delivery (the App Home: `bot.slack.home.HomeTabs.on_row`)."""
FindRun = Callable[[str | None], Awaitable[Run | None]]
Currency = Callable[[str, str | None], str | None]


@dataclass(frozen=True)
class Channels:
    approvals: str | None
    """Where approval cards go when their policy names no channel."""
    oncall: str | None
    """Where pages go."""


@dataclass(eq=False)
class SlackDelivery(OncePoster):
    client: AsyncWebClient
    queries: Queries
    deliveries: Deliveries
    _: KW_ONLY
    policies: Policies
    channels: Channels
    tool_of: ToolOf
    find_run: FindRun
    """The run a record names, or None when it has none or is gone."""
    resolvable_pages: bool = False
    """Whether page cards carry "It happened" / "It did not happen" (someone may press)."""
    similar: bool = False
    """Whether cards offer "Approve + similar…" (someone may write rules)."""
    outcomes: Outcomes = field(default_factory=lambda: Outcomes(Timing()))
    clock: Callable[[], datetime]
    """The runtime's clock: whether a card says its decision target was missed."""
    after_row: AfterRow | None = None
    currency: Currency | None = None
    """The currency an envelope's amounts are in (`Runtime.spend.currency`)."""
    self_removed: int = field(init=False, default=0)

    async def __call__(self, attempt: Attempt) -> None:
        item = attempt.item
        token = ATTEMPT.set(attempt)
        self.outcomes.begin(item.id, item.attempts)
        try:
            await self._deliver(item)
            if self.after_row is not None:
                await self.after_row(item, self.client)
            self.outcomes.forget(item.id)
        except NOT_FOUND:
            log.info("%s %s: its record is gone (pruned); nothing to tell", *_what(item))
            self.outcomes.forget(item.id)
        except SlackApiError as exc:
            error = slack_error(exc)
            if error in PERMANENT:
                self.outcomes.forget(item.id)
                await self._given_up(item)
                raise Undeliverable(f"Slack answered {error}") from exc
            if error in MISCONFIGURED:
                raise Misconfigured(f"Slack answered {error}: {HINTS.get(error, '')}") from exc
            raise
        finally:
            ATTEMPT.reset(token)

    async def _given_up(self, item: OutboxItem) -> None:
        """Say on the record that its post will never be made (surfaces show it)."""
        if item.topic == "approval_requested":
            await self.deliveries.set_approval_message(
                item.subject_id, channel=None, ts=None, delivery=Delivery.FAILED
            )
        elif item.topic == "page_opened":
            await self.deliveries.set_page_message(
                item.subject_id, channel=None, ts=None, delivery=Delivery.FAILED
            )

    async def _deliver(self, item: OutboxItem) -> None:
        topic = item.topic
        if topic == "approval_requested":
            await self.post_card(await self.queries.approval(item.subject_id), item)
        elif topic in ("approval_decided", "approval_voted"):
            approval = await self.queries.approval(item.subject_id)
            await self.update_card(approval)
            if topic == "approval_decided":
                note = cards.decision_note(approval, await self._display(approval))
                await self._thread_note(approval, note, item, "decided")
        elif topic == "approval_waiting":  # its waiter left, or came back
            await self.update_card(await self.queries.approval(item.subject_id))
        elif topic == "approval_reminded":
            approval = await self.queries.approval(item.subject_id)
            await self.remind(approval, item)
            await self.update_card(approval)  # its next reminder and who is asked moved on
        elif topic in ("page_opened", "page_reminded", "page_acknowledged"):
            page = await self.queries.page(item.subject_id)
            if topic == "page_opened":
                await self.post_page(page, item)
            elif topic == "page_reminded":
                await self.remind_page(page, item)
            else:
                await self.update_page(page)
        elif topic in ("run_finished", "run_noted"):
            await self._run_news(item)
        elif topic in ("rule_expiring", "rule_uses_noted"):
            await self._rule_news(item)
        elif topic in ("envelope_opened", "envelope_changed"):
            await self.envelope_news(await self.queries.envelope(item.subject_id), item)

    # approvals

    async def card(self, approval: Approval) -> dict[str, Any]:
        """The approval's card as it should look now."""
        run = await self.find_run(approval.run_id)
        policy = self._policy(approval)
        tool = await self.tool_of(approval)
        votes = await self.queries.votes(approval.id) if approval.required_approvals > 1 else []
        return cards.approval_message(
            approval,
            run,
            votes=votes,
            step=await self._asked_at(approval, run),
            reversibility=tool.effect.value if tool and tool.effect else None,
            compensator=tool.compensate if tool else None,
            allow_edit=policy.allow_edit,
            rule=approval.rule.summary if approval.rule else None,
            escalate_to=[policy.escalate_to] if policy.escalate_to else [],
            similar=self.similar,
            envelope=bool(approval.rule and approval.rule.limits),  # a tool limits count
            target=_target(approval, policy, self.clock()),
            display=tool.display if tool else None,
            chain=escalation.chain_line(approval, policy)
            if approval.state == ApprovalState.PENDING
            else None,
            now=self.clock(),
        )

    async def _asked_at(self, approval: Approval, run: Run | None) -> int | None:
        """The step the call was asked at: a card keeps it after the run moves on."""
        if run is None or approval.state == ApprovalState.PENDING or approval.call_id is None:
            return run.step if run else None
        return cards.asked_at(await self.queries.checkpoints(run.id), approval.call_id) or run.step

    async def _display(self, approval: Approval) -> Display | None:
        tool = await self.tool_of(approval)
        return tool.display if tool else None

    def _policy(self, approval: Approval) -> Policy:
        """The policy the approval was created under (its rule's), not today's."""
        return policy_of(approval, self.policies)

    async def post_card(self, approval: Approval, item: OutboxItem) -> None:
        if approval.message_ts:
            return
        channel = approval.channel or self.channels.approvals
        if channel is None:
            raise Misconfigured(
                f"no channel for approval {approval.id}: set the policy's channel or "
                "SIGNOFF_APPROVALS_CHANNEL (a channel id, C…), then restart"
            )
        message = await self.card(approval)
        await self._post_once(item, channel, message, "approval_id", approval.id, since=approval)

    async def update_card(self, approval: Approval) -> None:
        if not approval.message_ts or not approval.channel:
            return  # never posted (no channel): nothing to update
        message = await self.card(approval)
        await self.client.chat_update(
            channel=approval.channel,
            ts=approval.message_ts,
            text=message["text"],
            blocks=message["blocks"],
        )

    async def remind(self, approval: Approval, item: OutboxItem) -> None:
        if approval.state != ApprovalState.PENDING:
            return
        policy = self._policy(approval)
        message = cards.reminder_message(
            approval,
            reminders_sent=int(item.detail.get("reminders_sent", approval.reminders_sent)),
            escalated=bool(item.detail.get("escalated")),
            escalate_to=[policy.escalate_to] if policy.escalate_to else [],
            display=await self._display(approval),
        )
        message["blocks"].append(kit.context(escalation.waited_line(approval, self.clock())))
        target = _target(approval, policy, self.clock())
        if target:
            message["blocks"].append(kit.context(target))
        note = f"reminder-{item.detail.get('reminders_sent')}-{item.detail.get('escalated')}"
        await self._thread(approval, message, item, note)

    async def _thread_note(
        self, approval: Approval, text: str, item: OutboxItem, note: str
    ) -> None:
        await self._thread(approval, {"text": text}, item, note)

    async def _thread(
        self, approval: Approval, message: dict[str, Any], item: OutboxItem, note: str
    ) -> None:
        """A reply under the approval's card, once, even if an earlier try may have landed."""
        if not approval.message_ts or not approval.channel:
            return
        note_id = f"{approval.id}:{note}"
        await self._reply_once(item, approval.channel, approval.message_ts, message, note_id)

    # pages

    async def post_page(self, page: Page, item: OutboxItem) -> None:
        if page.message_ts:
            return
        channel = self.channels.oncall
        if channel is None:
            raise Misconfigured(
                f"no on-call channel for page {page.id}: set SIGNOFF_ONCALL_CHANNEL, then restart"
            )
        run = await self.find_run(page.run_id)
        message = await self._page_card(page, run)
        await self._post_once(item, channel, message, "page_id", page.id)

    async def _page_card(self, page: Page, run: Run | None) -> dict[str, Any]:
        about = Approval(id=page.id, tool=page.tool or "", args={}, run_id=page.run_id)
        return page_cards.page_message(
            page,
            run,
            args=await self._args_of(page),
            allow_resolve=self.resolvable_pages,
            display=await self._display(about) if page.tool else None,
        )

    async def remind_page(self, page: Page, item: OutboxItem) -> None:
        if page.acknowledged_by or not page.message_ts or not page.channel:
            return
        message = {"text": page_cards.page_reminder(page)}
        note_id = f"{page.id}:reminder-{item.id}"
        await self._reply_once(item, page.channel, page.message_ts, message, note_id)

    async def update_page(self, page: Page) -> None:
        if not page.message_ts or not page.channel:
            return
        run = await self.find_run(page.run_id)
        message = await self._page_card(page, run)
        await self.client.chat_update(
            channel=page.channel, ts=page.message_ts, text=message["text"], blocks=message["blocks"]
        )

    # runs

    async def run_finished(self, run: Run, item: OutboxItem) -> None:
        """One line under each of the run's cards."""
        announced = item.detail.get("status")
        if announced is not None and announced != run.status.value:
            # The run moved on since this row was written (it failed, then was resumed): the
            # note would say where it is now, twice; the row its next ending wrote says it.
            return
        approvals = await self.queries.approvals(run_id=run.id)
        note = cards.run_note(run, approvals)
        # After the cards' own news (posted, decided): the thread reads in the order it happened.
        if await self.queries.outbox_waiting_before(item.id, [a.id for a in approvals]):
            raise WaitsItsTurn(f"run {run.id}: its cards' updates go first; its note waits")
        undone = words.outcome_of(run) == words.UNDONE  # told again, once a call was undone
        mark = f"run-{words.UNDONE if undone else run.status.value}"
        for approval in approvals:
            await self.update_card(approval)  # the card says how the run ended, too
            await self._thread_note(approval, note, item, mark)

    async def _run_news(self, item: OutboxItem) -> None:
        if item.topic == "run_finished":
            await self.run_finished(await self.queries.run(item.subject_id), item)
        else:
            await self.run_noted(item)

    async def run_noted(self, item: OutboxItem) -> None:
        """A note under each of the run's cards: an effect it relied on was undone."""
        note = cards.relied_on_note(item.detail)
        mark = f"undone-{item.detail.get('by_run')}-{item.detail.get('by_call')}"
        for approval in await self.queries.approvals(run_id=item.subject_id):
            await self._thread_note(approval, note, item, mark)

    # learned rules

    async def _rule_news(self, item: OutboxItem) -> None:
        if item.topic == "rule_expiring":
            await self.rule_expiring(await self.queries.learned_rule(item.subject_id))
        else:
            await self.rule_uses(await self.queries.approval(item.subject_id), item)

    async def rule_expiring(self, rule: LearnedRule) -> None:
        """The author's DM that the rule expires within a day, with its uses as they are now.
        A DM has no history this app may read (no `im:history`), so a try whose outcome is
        unknown is not looked up: it is posted again (a rare duplicate, never a lost one)."""
        if rule.state != "active":
            return  # revoked since it was queued: nothing left to remind of
        await self._post(rule.author, {"text": rule_notes.expiry_reminder(rule)})

    async def rule_uses(self, card: Approval, item: OutboxItem) -> None:
        """One quiet note, under the card the rule grew from, of the uses in its batch."""
        rule_id = str(item.detail["rule_id"])
        since = datetime.fromisoformat(str(item.detail["since"]))
        until = datetime.fromisoformat(str(item.detail["until"]))
        uses = await self.queries.learned_rule_uses_since(rule_id, after=since)
        batch = [(ap, run) for ap, run, at in uses if at <= until]
        if batch:
            text = rule_notes.uses_note(rule_id, batch)
            await self._thread_note(card, text, item, f"rule-{rule_id}-{until.timestamp()}")

    # envelopes

    async def envelope_news(self, envelope: Envelope, item: OutboxItem) -> None:
        """Post the envelope's live message once (its channel, else the approvals one), or
        draw it again as the envelope is now (its edits are rate-limited in the outbox)."""
        currency = self.currency(envelope.tool, envelope.amount) if self.currency else None
        message = envelopes.live_message(envelope, currency, self.clock())
        if envelope.channel and envelope.message_ts:
            await self.client.chat_update(
                channel=envelope.channel,
                ts=envelope.message_ts,
                text=message["text"],
                blocks=message["blocks"],
            )
            return
        channel = envelope.channel or self.channels.approvals
        if item.topic != "envelope_opened" or channel is None:
            return  # never posted: nothing to edit
        ts = await self._find(item, channel, None, "envelope_id", envelope.id)
        if ts is None:
            ts = await self._post(channel, message)
        if ts is None:
            raise RetryAt(UNNAMED_WAIT, "posted, but Slack did not say its ts; looked up next")
        await self.deliveries.set_envelope_message(envelope.id, channel=channel, ts=ts)

    async def refresh(self, key: str, subject_id: str) -> None:
        """Render the message again as the record is now."""
        if key == "approval_id":
            await self.update_card(await self.queries.approval(subject_id))
        else:
            await self.update_page(await self.queries.page(subject_id))

    async def _args_of(self, page: Page) -> dict[str, Any] | None:
        if page.run_id is None or page.call_id is None:
            return None
        try:
            return (await self.queries.effect(page.run_id, page.call_id)).shown_args
        except NOT_FOUND:
            return None


def _what(item: OutboxItem) -> tuple[str, str]:
    return item.topic, item.subject_id


def _target(approval: Approval, policy: Policy, now: datetime) -> str | None:
    """The policy's decision target as the card and reminders say it, if it has one."""
    if policy.decide_within is None:
        return None
    late = slo_missed(approval, policy, now)
    return texts.decision_target(duration_text(policy.decide_within), missed=late)
