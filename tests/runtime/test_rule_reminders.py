"""The author of a learned rule is told once, a day before it expires, with its use count;
its uses are noted in batches under the card it grew from - both through the outbox, so a
failing Slack (the fake's 500s and lost answers) delays them but neither loses nor doubles
them; and the modal's blocks say what the backtest found (pure builders)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from pathlib import Path
from typing import Any

from bot.dev.slack.fake import FakeSlack
from bot.directory import web_client
from bot.outbox import OutboxSender
from bot.outbox import Timing
from bot.slack.delivery import Channels
from bot.slack.delivery import SlackDelivery
from bot.slack.outcomes import Outcomes
from bot.slack.rule_notes import note_uses
from bot.slack.rule_notes import remind_expiring
from bot.slack.similar import rule_modal
from runtime import Agent
from runtime import Runtime
from runtime import ScriptedModel
from runtime import ToolContext
from runtime import tool
from runtime.approvals.learned_rules import Backtest
from runtime.approvals.learned_rules import Hit
from runtime.approvals.learned_rules import LearnedRulesConfig
from runtime.approvals.learned_rules import Proposal
from store import Store
from store import open_store
from tests.conftest import Clock

RULE = 'tool == "issue_refund" && args.amount_cents <= 2500'


@tool(description="Refund.", effect="reversible", compensate="issue_refund")
async def issue_refund(order_id: str, amount_cents: int, *, ctx: ToolContext) -> dict[str, Any]:
    return {}


CARDS = "C0APPROVALS"


@asynccontextmanager
async def slack_outbox(rt: Runtime) -> AsyncIterator[tuple[FakeSlack, OutboxSender]]:
    """The fake Slack over real HTTP, and the outbox sender and delivery `signoff serve`
    runs, with a short claim so that retries after unknown outcomes come within the test."""
    fake = FakeSlack(channels=(CARDS,), users={"U0W": "writer"})
    await fake.start()
    timing = Timing(2.0)
    client = web_client("xoxb-test", base_url=fake.base_url, idempotent_only=True, timeout=1)
    delivery = SlackDelivery(
        client,
        rt.queries,
        rt.deliveries,
        policies=rt.policies,
        channels=Channels(approvals=CARDS, oncall=None),
        tool_of=rt.tool_for,
        find_run=rt.find_run,
        outcomes=Outcomes(timing),
        clock=rt.clock,
    )
    sender = OutboxSender(
        rt.deliveries, delivery, owner="w-test", timers=rt.scheduler, claim_for=timedelta(seconds=2)
    )
    try:
        yield fake, sender
    finally:
        await fake.stop()


async def deliver_all(store: Store, sender: OutboxSender, within: float = 40.0) -> None:
    deadline = time.monotonic() + within
    while (await store.outbox_backlog())[0]:
        assert time.monotonic() < deadline, "the outbox never emptied"
        await sender.send_due()
        await asyncio.sleep(0.1)


async def test_the_authors_expiry_dm_survives_a_slack_outage_and_is_sent_once(
    tmp_path: Path, clock: Clock
) -> None:
    async with open_store(f"sqlite:///{tmp_path / 'r.db'}") as store:
        agent = Agent("ops", model=ScriptedModel(["ok"]), tools=[issue_refund])
        config = LearnedRulesConfig(writers=("U0W",))
        rt = Runtime(store, [agent], clock=clock, learned_rules=config)
        rule, _ = await rt.rules.make(
            "issue_refund", RULE, author="U0W", reason="r", expires_in=timedelta(days=3)
        )
        async with slack_outbox(rt) as (fake, sender):
            assert await remind_expiring(rt, sender.wake) == 0
            clock.advance(days=2, hours=1)
            fake.fail_next(3, status=500)
            assert await remind_expiring(rt, sender.wake) == 1
            assert await remind_expiring(rt, sender.wake) == 0  # queued once

            await sender.send_due()  # Slack fails: the DM is late, and still queued
            assert fake.messages.get("D0W", []) == []
            assert (await store.outbox_backlog())[0] == 1
            await deliver_all(store, sender)

            [dm] = fake.messages["D0W"]
            assert f"`{rule.id}`" in dm.text
            assert "approved 0 request(s)" in dm.text
            failed = [c for c in fake.calls_to("chat.postMessage") if c.status == 500]
            assert len(failed) == 3


async def test_a_rules_uses_are_noted_in_batches_in_its_cards_thread_once_despite_slack(
    tmp_path: Path, clock: Clock
) -> None:
    async with open_store(f"sqlite:///{tmp_path / 'r.db'}") as store:
        agent = Agent("ops", model=ScriptedModel(["ok"]), tools=[issue_refund])
        rt = Runtime(
            store, [agent], clock=clock, learned_rules=LearnedRulesConfig(writers=("U0W",))
        )

        async def ask(n: int) -> str:
            args = {"order_id": f"o-{n}", "amount_cents": 100}
            approval, _ = await rt.request_approval("issue_refund", args, requested_by="U0A")
            return approval.id

        async with slack_outbox(rt) as (fake, sender):
            card = await ask(0)
            await rt.decide(card, "approved", by="U0W")
            await deliver_all(store, sender)
            ts = (await store.get_approval(card)).message_ts
            assert ts is not None
            await rt.rules.make("issue_refund", RULE, author="U0W", reason="r", from_approval=card)
            assert await note_uses(rt, sender.wake) == 0
            clock.advance(seconds=1)
            first = [await ask(1), await ask(2)]
            await deliver_all(store, sender)  # the auto-approvals' own cards

            # The first try fails; the second lands but its answer is lost (a 500): the
            # third looks in the thread first, finds it, and does not post it again.
            fake.fail_next(1, status=500)
            fake.drop_after_post(1)
            assert await note_uses(rt, sender.wake) == 1
            assert await note_uses(rt, sender.wake) == 0
            await sender.send_due()
            assert _notes(fake, ts) == []
            await deliver_all(store, sender)
            [one] = _notes(fake, ts)
            assert "approved 2 similar requests at once" in one.text
            assert all(f"`{ap}`" in one.text for ap in first)
            assert fake.calls_to("conversations.replies")  # it was looked for first

            clock.advance(seconds=1)
            third = await ask(3)
            assert await note_uses(rt, sender.wake) == 1
            await deliver_all(store, sender)
            _, two = _notes(fake, ts)
            assert "approved 1 similar request at once" in two.text
            assert f"`{third}`" in two.text


def _notes(fake: FakeSlack, ts: str) -> list[Any]:
    return [m for m in fake.thread(CARDS, ts) if m.ts != ts and "similar request" in m.text]


def test_the_modal_asks_for_a_typed_confirmation_only_when_a_decline_would_be_approved() -> None:
    hit = Hit("ap_1", "r1", datetime(2026, 11, 29, tzinfo=UTC), "declined", "U0BOSS", "no")
    declined = Backtest("issue_refund", RULE, considered=3, hits=(hit,))
    clean = Backtest("issue_refund", RULE, considered=3)

    def proposal_of(tested: Backtest, second: bool = False) -> Proposal:
        return Proposal(
            "issue_refund", RULE, timedelta(days=7), timedelta(days=90), None, second, tested
        )

    def modal(tested: Backtest, second: bool = False) -> dict[str, Any]:
        return rule_modal("ap_9", proposal_of(tested, second), channel="C0APPROVALS", tested=tested)

    ids = [b.get("block_id") for b in modal(declined)["blocks"]]
    assert ids == ["when", "expires", "reason", None, "confirm"]
    assert "confirm" not in [b.get("block_id") for b in modal(clean)["blocks"]]
    assert "cannot be undone" in str(modal(clean, second=True)["blocks"])
    text = modal(declined)["blocks"][3]["text"]["text"]
    assert "1 of those a person declined:\n• `ap_1` by <@U0BOSS>: no" in text
    on_card = Hit("ap_2", "r2", hit.at, "declined", "U0BOSS", card=("C0APPROVALS", "17.000100"))
    linked = Backtest("issue_refund", RULE, considered=1, hits=(on_card,))
    assert "<https://slack.com/archives/C0APPROVALS/p17000100|ap_2>" in str(modal(linked))
    running = rule_modal("ap_9", proposal_of(declined), channel="C0APPROVALS", tested=None)
    assert [b.get("block_id") for b in running["blocks"]] == ["when", "expires", "reason", None]
    assert "Backtest running" in running["blocks"][3]["text"]["text"]
    typed = {"when": "args.amount_cents < 10", "expires": "3", "reason": "tiny"}
    kept = rule_modal("ap_9", proposal_of(declined), channel=None, tested=declined, typed=typed)
    assert [b["element"].get("initial_value") for b in kept["blocks"] if "element" in b] == [
        "args.amount_cents < 10",
        "3",
        "tiny",
        None,
    ]
