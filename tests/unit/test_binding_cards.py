"""Issue 25 on the Slack card: a conflict is said in plain words with "Approve as separate"
instead of Approve; an edit shows what runs with what was asked beside it, in the header,
the fields, the final card and the thread note; a possible duplicate says what differs."""

from __future__ import annotations

import json
from datetime import UTC
from datetime import datetime
from typing import Any

from bot.slack import cards
from store import ApprovalState
from store import EffectStatus
from store.records import EffectConflict
from tests.unit.test_blocks import AT
from tests.unit.test_blocks import assert_inert
from tests.unit.test_blocks import assert_message
from tests.unit.test_blocks import card
from tests.unit.test_blocks import decided
from tests.unit.test_blocks import make_approval

EARLIER = EffectConflict(
    run_id="run-a",
    call_id="call_9",
    tool="issue_refund",
    status=EffectStatus.COMPLETED,
    args={"order_id": "4471", "amount_cents": 2500},
    digest="sha256:aa",
    approval_id="apr_1",
    approved_by="U0ALICE",
    approved_at=datetime(2026, 12, 1, 14, 2, tzinfo=UTC),
)
ASKS_2000 = {"order_id": "4471", "amount_cents": 2000}


def buttons(message: dict[str, Any]) -> list[tuple[str, str]]:
    [actions] = [b for b in message["blocks"] if b["type"] == "actions"]
    return [(e["action_id"], e["text"]["text"]) for e in actions["elements"]]


def test_a_conflict_is_said_in_plain_words_and_offers_separate_not_approve() -> None:
    message = card(make_approval(args=ASKS_2000, conflict=EARLIER))

    text = json.dumps(message)
    assert (
        "`issue_refund` was already done with amount\\u2060_\\u2060cents 2500 by run `run-a` "
        "(approved by <@U0ALICE> at <!date^" in text
    )
    assert (
        "this run asks amount\\u2060_\\u2060cents 2000.* Decline, or approve it as a separate"
        in text
    )
    assert buttons(message) == [
        ("approve_separate", "Approve as separate"),
        ("edit", "Edit…"),
        ("ask", "Ask…"),
        ("decline", "Decline…"),
    ]
    assert_message(message)


def test_without_a_conflict_the_card_approves_plainly() -> None:
    assert buttons(card(make_approval(args=ASKS_2000)))[0] == ("approve", "Approve")


def test_an_approval_as_separate_says_so_on_the_final_card() -> None:
    approved = decided(
        ApprovalState.APPROVED, args=ASKS_2000, conflict=EARLIER, key_suffix="apr_123"
    )
    assert "approved as a separate `issue_refund`" in json.dumps(card(approved))


def test_an_edit_shows_what_runs_with_what_was_asked_everywhere_on_the_card() -> None:
    edited = decided(ApprovalState.APPROVED, approved_args=ASKS_2000)

    message = card(edited)

    assert message["blocks"][0]["text"]["text"] == "issue_refund 2000 cents on 4471"
    fields = [f["text"] for f in message["blocks"][2]["fields"]]
    assert "*amount\u2060_\u2060cents*\n2000 (asked 2500)" in fields
    outcome = message["blocks"][-1]["elements"][0]["text"]
    assert outcome.startswith(
        f":white_check_mark: Approved by <@U0BOB> at <!date^{int(AT.timestamp())}"
    )
    assert outcome.endswith("· edited by <@U0BOB>: amount\u2060_\u2060cents 2000 (asked 2500)")
    assert cards.decision_note(edited) == (
        "<@U0ASKER> your request `issue_refund 2500 cents on 4471` was approved by <@U0BOB>, "
        "who edited it: amount\u2060_\u2060cents 2000 (asked 2500)."
    )


def test_a_possible_duplicate_says_what_differs() -> None:
    message = card(make_approval(args=ASKS_2000, duplicate_of="run-a", duplicate_args=EARLIER.args))
    assert (
        "possible duplicate of run `run-a`: the same effect, but it asked "
        "amount\\u2060_\\u2060cents 2500 and this asks "
        "amount\\u2060_\\u2060cents 2000" in json.dumps(message)
    )
    same = card(
        make_approval(
            duplicate_of="run-a", duplicate_args={"order_id": "4471", "amount_cents": 2500}
        )
    )
    assert "it asked for the same effect" in json.dumps(same)


def test_hostile_conflicting_args_stay_text() -> None:
    hostile = "<!channel> <https://evil|bank.com>"
    conflict = EARLIER.model_copy(
        update={"args": {"order_id": hostile, "amount_cents": 1}, "approved_by": "U0ANN"}
    )
    message = card(make_approval(args={"order_id": "4471", "amount_cents": 2}, conflict=conflict))
    assert_inert(message)
    assert_message(message)


def edit_refused(asked: dict[str, Any], card_conflict: EffectConflict | None) -> str:
    """What the Edit modal says when the edited arguments hit an earlier effect's key."""
    from bot.slack.refusals import edit_refusal
    from runtime import errors

    shown = make_approval(conflict=card_conflict)
    exc = errors.KeyConflict("raw", conflict=EARLIER, asked=asked, approval=shown, by="U0BOB")
    return edit_refusal(exc)


def test_an_edit_into_a_used_key_advises_only_the_buttons_its_card_shows() -> None:
    """A repeat card (no conflict as asked) has Approve, not "Approve as separate": the
    modal's advice says Approve (the call as asked, made once) or Decline."""
    said = edit_refused(ASKS_2000, card_conflict=None)

    assert said.startswith("Not approved, nothing was done: `issue_refund` was already done")
    assert "with amount\u2060_\u2060cents 2500 by run `run-a` (approved by <@U0ALICE>" in said
    assert "this edit asks amount\u2060_\u2060cents 2000" in said
    assert "Approve on the card runs the call as asked" in said
    assert "separate" not in said
    assert said.endswith("or Decline.")
    assert buttons(card(make_approval()))[0] == ("approve", "Approve")  # what it advises


def test_an_edit_on_a_conflict_card_points_at_its_approve_as_separate() -> None:
    said = edit_refused({"order_id": "4471", "amount_cents": 1500}, card_conflict=EARLIER)

    assert "Approve as separate on the card runs the call as asked" in said
    assert "this edit asks amount\u2060_\u2060cents 1500" in said
    assert buttons(card(make_approval(conflict=EARLIER)))[0][0] == "approve_separate"
