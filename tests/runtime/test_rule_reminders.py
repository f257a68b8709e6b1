"""The author of a learned rule is told once, a day before it expires, with its use count;
and the modal's blocks say what the backtest found (pure builders)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bot.slack.similar import remind_expiring, rule_modal
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
    assert "ap\u2060_\u20601" in modal(declined)["blocks"][3]["text"]["text"]
