"""The author of a learned rule is told once, a day before it expires, with its use count;
its uses are noted in batches under the card it grew from; and the modal's blocks say what
the backtest found (pure builders)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bot.slack.rule_notes import note_uses, remind_expiring
from bot.slack.similar import rule_modal
from runtime import Agent, Runtime, ScriptedModel, ToolContext, tool
from runtime.learned_rules import Backtest, Hit, LearnedRulesConfig, Proposal
from store import open_store
from tests.conftest import Clock

RULE = 'tool == "issue_refund" && args.amount_cents <= 2500'


@tool(description="Refund.", effect="reversible", compensate="issue_refund")
async def issue_refund(order_id: str, amount_cents: int, *, ctx: ToolContext) -> dict[str, Any]:
    return {}


class Recorder:
    """Stands in for the Web API client: what the bot would have posted."""

    def __init__(self) -> None:
        self.posted: list[dict[str, Any]] = []

    async def chat_postMessage(self, **kwargs: Any) -> dict[str, Any]:
        self.posted.append(kwargs)
        return {"ok": True}


async def test_the_author_is_reminded_once_a_day_before_expiry(
    tmp_path: Path, clock: Clock
) -> None:
    async with open_store(f"sqlite:///{tmp_path / 'r.db'}") as store:
        agent = Agent("ops", model=ScriptedModel(["ok"]), tools=[issue_refund])
        config = LearnedRulesConfig(writers=("U0WRITER",))
        rt = Runtime(store, [agent], clock=clock, learned_rules=config)
        rule, _ = await rt.rules.make(
            "issue_refund", RULE, author="U0WRITER", reason="r", expires_in=timedelta(days=3)
        )
        slack = Recorder()
        assert await remind_expiring(rt, slack) == 0  # type: ignore[arg-type]
        clock.advance(days=2, hours=1)
        assert await remind_expiring(rt, slack) == 1  # type: ignore[arg-type]
        assert await remind_expiring(rt, slack) == 0  # type: ignore[arg-type]
        [dm] = slack.posted
        assert dm["channel"] == "U0WRITER"
        assert f"`{rule.id}`" in dm["text"]
        assert "approved 0 request(s)" in dm["text"]


async def test_a_rules_uses_are_noted_in_batches_in_the_thread_of_its_card(
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

        card = await ask(0)
        await store.set_approval_message(
            card, channel="C0APPROVALS", ts="1.5", delivery="delivered"
        )
        await rt.decide(card, "approved", by="U0W")
        await rt.rules.make("issue_refund", RULE, author="U0W", reason="r", from_approval=card)
        slack = Recorder()
        assert await note_uses(rt, slack) == 0  # type: ignore[arg-type]
        clock.advance(seconds=1)
        first = [await ask(1), await ask(2)]
        assert await note_uses(rt, slack) == 1  # type: ignore[arg-type]
        assert await note_uses(rt, slack) == 0  # type: ignore[arg-type]
        clock.advance(seconds=1)
        third = await ask(3)
        assert await note_uses(rt, slack) == 1  # type: ignore[arg-type]

        one, two = slack.posted
        assert (one["channel"], one["thread_ts"], two["thread_ts"]) == ("C0APPROVALS", "1.5", "1.5")
        assert "approved 2 similar requests at once" in one["text"]
        assert all(f"`{ap}`" in one["text"] for ap in first)
        assert "approved 1 similar request at once" in two["text"]
        assert f"`{third}`" in two["text"]
        assert "reply_broadcast" not in one


def test_the_modal_asks_for_a_typed_confirmation_only_when_a_decline_would_be_approved() -> None:
    hit = Hit("ap_1", "r1", datetime(2026, 11, 29, tzinfo=UTC), "declined", "U0BOSS", "no")
    declined = Backtest("issue_refund", RULE, considered=3, hits=(hit,))
    clean = Backtest("issue_refund", RULE, considered=3)

    def modal(tested: Backtest, second: bool = False) -> dict[str, Any]:
        proposal = Proposal(
            "issue_refund", RULE, timedelta(days=7), timedelta(days=90), None, second, tested
        )
        return rule_modal("ap_9", proposal, channel="C0APPROVALS")

    ids = [b.get("block_id") for b in modal(declined)["blocks"]]
    assert ids == ["when", "expires", "reason", None, "confirm"]
    assert "confirm" not in [b.get("block_id") for b in modal(clean)["blocks"]]
    assert "cannot be undone" in str(modal(clean, second=True)["blocks"])
    text = modal(declined)["blocks"][3]["text"]["text"]
    assert "1 of those a person declined:\n• `ap_1` by <@U0BOSS>: no" in text
    on_card = Hit("ap_2", "r2", hit.at, "declined", "U0BOSS", card=("C0APPROVALS", "17.000100"))
    linked = Backtest("issue_refund", RULE, considered=1, hits=(on_card,))
    assert "<https://slack.com/archives/C0APPROVALS/p17000100|ap_2>" in str(modal(linked))
