"""How a limit reads on every surface: money in its currency, counts as numbers, the window
in words, a calendar day with its zone, a call that could not be counted, a limit in shadow
mode; on the approval card and in `/runs status`, with nothing the agent wrote in it."""

from __future__ import annotations

from typing import Any

import pytest

from bot.reading import limit_lines
from bot.slack import cards
from bot.slack import replies
from runtime.spend import words
from store import Approval
from store import Run
from store.records import LimitState
from store.records import RuleMatch
from store.records import SpendWindow

THIRTY_DAYS = SpendWindow(seconds=30 * 86400, width=86400)


def state(**changes: Any) -> LimitState:
    fields: dict[str, Any] = {
        "name": "per_customer",
        "window": THIRTY_DAYS,
        "key": "<!channel> c-1",
        "amount": 12000,
        "max": 50000,
        "used": 30000,
        "money": "USD",
        "each": "customer",
    }
    return LimitState(**(fields | changes))


@pytest.mark.parametrize(
    ("limit", "line"),
    [
        (state(), "$420 of $500 for this customer in 30 days, after this refund"),
        (
            state(
                amount=1,
                used=19,
                max=20,
                money=None,
                each=None,
                window=SpendWindow(seconds=3600, width=120),
            ),
            "20 of 20 in 1 hour, after this refund",
        ),
        (
            state(used=45000, amount=5050),
            "$500.50 of $500 for this customer in 30 days, after this refund — over limit "
            "per_customer",
        ),
        (
            state(window=SpendWindow(timezone="Europe/Paris")),
            "$420 of $500 for this customer today (Europe/Paris), after this refund",
        ),
        (
            state(outcome="error", key=None, error="`args.x`: the call has no 'x'"),
            "limit per_customer: not counted, so asked (`args.x`: the call has no 'x')",
        ),
        (
            state(mode="shadow", used=45000),
            "$570 of $500 for this customer in 30 days, after this refund — over limit "
            "per_customer (shadow: decides nothing)",
        ),
    ],
)
def test_a_limit_reads_the_same_everywhere(limit: LimitState, line: str) -> None:
    assert words.line(limit, "issue_refund") == line


def approval(*limits: LimitState) -> Approval:
    match = RuleMatch(kind="no_match", summary="no rule matched → policy default", limits=limits)
    return Approval(
        id="ap_1",
        tool="issue_refund",
        args={"customer_id": "<!channel> c-1", "amount_cents": 12000},
        run_id="r-1",
        call_id="c-1",
        rule=match,
    )


def texts(message: dict[str, Any]) -> str:
    return repr(message["blocks"])


def limit_blocks(message: dict[str, Any]) -> list[str]:
    return [repr(b) for b in message["blocks"] if "after this refund" in repr(b)]


def test_the_card_and_runs_status_show_each_limit_line_and_never_the_key() -> None:
    asked = approval(state(), state(name="daily", window=SpendWindow(timezone="UTC"), max=100000))
    run = Run(id="r-1", agent="refunds", task="t", lineage_id="r-1")

    card = cards.approval_message(asked, run)
    status = replies.run_status(run, [asked], [])

    assert limit_lines(asked) == [
        "$420 of $500 for this customer in 30 days, after this refund",
        "$420 of $1,000 for this customer today (UTC), after this refund",
    ]
    for message in (card, status):
        (shown,) = limit_blocks(message)
        assert "$420 of $500 for this customer in 30 days, after this refund" in shown
        assert "$420 of $1,000 for this customer today (UTC)" in shown
        assert "c-1" not in shown  # the key's value (the agent's text) is never in it
    assert "Limits its calls counted against (2)" in texts(status)
    assert limit_lines(approval()) == []
