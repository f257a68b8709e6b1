"""The approval card shows the context the tool read (or why it could not), the agent's
stated reason and why a call is asked again; each as inert text, masked like the call."""

from __future__ import annotations

import json
from typing import Any

from support.records import an_approval

from bot.slack import cards
from store import Approval

ARGS = {"order_id": "4471", "amount_cents": 2500, "card": "4242"}


def approval(**changes: Any) -> Approval:
    """Approval "apr_123" (see `support.records`) of a refund charged to a card, masked."""
    return an_approval(**({"args": ARGS, "sensitive": ("card",)} | changes))


def text_of(approval: Approval) -> str:
    return json.dumps(cards.approval_message(approval, None)["blocks"], ensure_ascii=False)


def test_the_card_shows_the_facts_the_reason_and_why_it_is_asked_again() -> None:
    shown = text_of(
        approval(
            context={"order_total": "$25.00", "card": "4242 4242", "refunds_30d": 2},
            agent_reason="Charged twice <@U0BOSS> <!channel> see <http://evil|here>",
            reasked={
                "approval_id": "apr_0",
                "why": "facts_changed",
                "text": "order total was $25.00, now $40.00",
            },
        )
    )

    assert "order total: $25.00" in shown
    assert "refunds 30d: 2" in shown
    assert "4242 4242" not in shown  # a fact named like a sensitive argument is masked
    assert "Asked again:* order total was $25.00, now $40.00" in shown
    assert "The agent's reason:" in shown
    assert "<@U0BOSS>" not in shown
    assert "<!channel>" not in shown
    assert "<http://evil" not in shown


def test_a_context_that_could_not_be_read_says_why() -> None:
    shown = text_of(approval(context_error="LookupError: the orders service is down"))

    assert "context unavailable: LookupError: the orders service is down" in shown


def test_a_card_without_context_has_no_such_lines() -> None:
    shown = text_of(approval())

    assert "Context" not in shown
    assert "context unavailable" not in shown
