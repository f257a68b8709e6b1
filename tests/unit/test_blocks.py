"""One job, long because each Slack message has its tests: the Block Kit builders.

Slack messages built by pure functions: their shape, their words, and Block Kit's limits."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from collections.abc import Sequence
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from typing import Any

import pytest
from support.records import a_checkpoint
from support.records import a_page
from support.records import a_run
from support.records import an_approval

from bot.slack import cards
from bot.slack import page_cards
from bot.slack import replies
from bot.slack.home_view import home_view
from store import Approval
from store import ApprovalState
from store import Budget
from store import Checkpoint
from store import Message
from store import Run
from store import RunStatus
from store import ToolCall
from store import Usage

AT = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
AT_SLACK = "<!date^1796126400^{date_short_pretty} at {time}|2026-12-01 12:00 UTC>"
HOSTILE = (
    "<!channel> <!here> <!everyone> <@U123> <#C123> <!subteam^S123> "
    "<https://evil|bank.com> *bold* _x_ ~x~ `tick` ```code``` &lt;!here&gt; \x1b[31m"
)
HUGE = "<@U666> " + "x" * 50_000


# factories


def make_run(**changes: Any) -> Run:
    """Run "order-4471" (see `support.records`), waiting at step 3 of 10 on an approval."""
    fields: dict[str, Any] = {
        "step": 3,
        "status": RunStatus.WAITING_APPROVAL,
        "stop_reason": "waiting_approval",
        "budget": Budget(max_steps=10, max_cost=1.0),
        "usage": Usage(steps=3, input_tokens=1200, output_tokens=300, cost=0.0123),
    }
    return a_run(**(fields | changes))


def make_approval(**changes: Any) -> Approval:
    """Approval "apr_123" (see `support.records`), asked two hours before its deadline AT."""
    return an_approval(**({"deadline": AT, "created_at": AT - timedelta(hours=2)} | changes))


def decided(state: ApprovalState, **changes: Any) -> Approval:
    return make_approval(**({"state": state, "decided_by": "U0BOB", "decided_at": AT} | changes))


def card(approval: Approval | None = None, **options: Any) -> dict[str, Any]:
    defaults: dict[str, Any] = {
        "step": 3,
        "reversibility": "reversible",
        "compensator": "reverse_refund",
        "allow_edit": True,
    }
    return cards.approval_message(approval or make_approval(), make_run(), **(defaults | options))


def huge_args(count: int = 100) -> dict[str, Any]:
    return {f"{HOSTILE} key {i} " + "k" * 1000: HUGE for i in range(count)}


# the limits


def assert_within_limits(items: Sequence[dict[str, Any]], *, max_blocks: int) -> None:
    """Every Block Kit limit Signoff's builders must keep, whatever they were given."""
    assert len(items) <= max_blocks
    for block in items:
        check = _CHECKS[block["type"]]
        if "block_id" in block:
            assert 0 < len(block["block_id"]) <= 255
        check(block)
        for obj in _text_objects(block):
            assert obj["type"] in ("plain_text", "mrkdwn")
            assert obj["text"]
            if obj["type"] == "mrkdwn":
                assert obj.get("verbatim") is True, obj


def _header(block: dict[str, Any]) -> None:
    assert block["text"]["type"] == "plain_text"
    assert len(block["text"]["text"]) <= 150


def _section(block: dict[str, Any]) -> None:
    assert "text" in block or "fields" in block
    if "text" in block:
        assert len(block["text"]["text"]) <= 3000
    if "fields" in block:
        assert 0 < len(block["fields"]) <= 10
        assert all(len(f["text"]) <= 2000 for f in block["fields"])


def _context(block: dict[str, Any]) -> None:
    assert 0 < len(block["elements"]) <= 10
    assert all(len(e["text"]) <= 3000 for e in block["elements"])


def _actions(block: dict[str, Any]) -> None:
    assert 0 < len(block["elements"]) <= 25
    for button in block["elements"]:
        _button(button)


def _button(button: dict[str, Any]) -> None:
    assert button["type"] == "button"
    assert 0 < len(button["action_id"]) <= 255
    assert button["text"]["type"] == "plain_text"
    assert len(button["text"]["text"]) <= 75
    assert 0 < len(button["value"]) <= 2000
    assert button.get("style", "primary") in ("primary", "danger")
    if "confirm" in button:
        confirm = button["confirm"]
        assert len(confirm["title"]["text"]) <= 100
        assert len(confirm["text"]["text"]) <= 300
        assert len(confirm["confirm"]["text"]) <= 30
        assert len(confirm["deny"]["text"]) <= 30


def _input(block: dict[str, Any]) -> None:
    assert len(block["label"]["text"]) <= 2000
    assert len(block.get("hint", {}).get("text", "")) <= 2000
    element = block["element"]
    assert 0 < len(element["action_id"]) <= 255
    assert element["max_length"] <= 3000
    assert len(element.get("initial_value", "")) <= element["max_length"]
    assert len(element.get("placeholder", {}).get("text", "")) <= 150


_CHECKS = {
    "header": _header,
    "section": _section,
    "context": _context,
    "actions": _actions,
    "input": _input,
    "divider": lambda block: None,
}


def _text_objects(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        if node.get("type") in ("plain_text", "mrkdwn"):
            yield node
            return
        for value in node.values():
            yield from _text_objects(value)
    elif isinstance(node, list):
        for value in node:
            yield from _text_objects(value)


def assert_message(message: dict[str, Any]) -> None:
    """A message: limits, a fallback text, and short enough to post (msg_blocks_too_long)."""
    assert 0 < len(message["text"]) <= 3000
    assert_within_limits(message["blocks"], max_blocks=50)
    assert len(json.dumps(message["blocks"], ensure_ascii=False)) <= 13_000


def assert_view(view: dict[str, Any]) -> None:
    assert_within_limits(view["blocks"], max_blocks=100)
    if view["type"] == "modal":
        for key in ("title", "close", "submit"):
            if key in view:
                assert len(view[key]["text"]) <= 24
        assert len(view["private_metadata"]) <= 3000
        assert len(view["callback_id"]) <= 255


def mrkdwn_texts(message: dict[str, Any]) -> list[str]:
    found = [message["text"]] if "text" in message else []
    return found + [o["text"] for o in _text_objects(message["blocks"]) if o["type"] == "mrkdwn"]


_OURS = re.compile(
    r"<@U0ASKER>|<@U0BOB>|<@U0ANN>|"
    r"<!date\^\d+\^\{date_short_pretty\} at \{time\}\|\d{4}-\d\d-\d\d \d\d:\d\d UTC>"
)


_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.DOTALL)


def assert_inert(message: dict[str, Any]) -> None:
    """No control sequence in any mrkdwn text but the mentions and dates we add, and no
    styling from hostile text outside code (where Slack styles nothing)."""
    for text in mrkdwn_texts(message):
        rest = _OURS.sub("", text)
        assert "<" not in rest, text
        assert ">" not in rest, text
        styled = _CODE.sub("", text)
        assert "*bold*" not in styled
        assert "_x_" not in styled
        assert "```code```" not in styled
        assert "\x1b" not in text
    for obj in _text_objects(message["blocks"]):
        assert "\x1b" not in obj["text"]


# the approval card


def test_pending_card_has_the_sketched_shape() -> None:
    message = card()
    header, about, fields, context, actions = message["blocks"]
    assert header == {
        "type": "header",
        "text": {"type": "plain_text", "text": "issue_refund 2500 cents on 4471"},
    }
    assert about["text"]["text"] == (
        "*Task:* Refund order 4471 for the cracked blender jar\n"
        "*Asked by* <@U0ASKER> · run `order-4471` · step 3"
    )
    assert [f["text"] for f in fields["fields"]] == [
        "*Tool*\n`issue_refund`",
        "*Effect*\nreversible (compensated by `reverse_refund`)",
        "*order\u2060_\u2060id*\n4471",
        "*amount\u2060_\u2060cents*\n2500",
    ]
    assert context["elements"][0]["text"] == f"expires {AT_SLACK} · policy `refunds`"
    assert actions["block_id"] == "approval:apr_123"
    assert [b["action_id"] for b in actions["elements"]] == ["approve", "edit", "ask", "decline"]
    assert [b["value"] for b in actions["elements"]] == ["apr_123"] * 4
    assert [b.get("style") for b in actions["elements"]] == ["primary", None, None, "danger"]
    confirm = actions["elements"][0]["confirm"]
    assert confirm["title"]["text"] == "Approve issue_refund 2500 cents on 4471?"
    assert "can be reversed" in confirm["text"]["text"]
    assert message["metadata"] == {
        "event_type": "signoff_approval",
        "event_payload": {"approval_id": "apr_123", "run_id": "order-4471"},
    }
    assert message["text"] == (
        "Approval needed: issue\u2060_\u2060refund 2500 cents on 4471 (run `order-4471`), "
        "asked by <@U0ASKER>"
    )
    assert_message(message)


def test_pending_card_without_edit_or_effect() -> None:
    message = card(allow_edit=False, reversibility=None, compensator=None)
    actions = message["blocks"][-1]
    assert [b["action_id"] for b in actions["elements"]] == ["approve", "ask", "decline"]
    assert [f["text"] for f in message["blocks"][2]["fields"]][:2] == [
        "*Tool*\n`issue_refund`",
        "*order\u2060_\u2060id*\n4471",
    ]


def test_irreversible_confirm_says_so() -> None:
    message = card(reversibility="irreversible", compensator=None)
    confirm = message["blocks"][-1]["elements"][0]["confirm"]
    assert confirm["text"]["text"] == (
        "This runs issue_refund 2500 cents on 4471. It cannot be undone."
    )
    assert "*Effect*\nirreversible: cannot be undone" in mrkdwn_texts(message)


def test_quorum_progress_rule_and_escalation() -> None:
    approval = make_approval(required_approvals=2, escalated=True)
    message = card(approval, votes=["U0ANN"], rule="amount over $200", escalate_to=["S0OPS"])
    context = message["blocks"][3]["elements"][0]["text"]
    assert context == (
        f"Needs 2 approvals · 1 of 2: <@U0ANN> · expires {AT_SLACK} · policy `refunds` · "
        "rule: amount over $200 · escalated to <!subteam^S0OPS>"
    )
    # a quorum votes on the proposed arguments: no Edit
    assert [b["action_id"] for b in message["blocks"][-1]["elements"]] == [
        "approve",
        "ask",
        "decline",
    ]


def test_requester_that_is_not_a_user_id_is_text() -> None:
    message = card(make_approval(requested_by="<!channel>"))
    assert "*Asked by* &lt;!channel&gt;" in message["blocks"][1]["text"]["text"]
    assert_inert(message)


def test_card_without_a_run() -> None:
    message = cards.approval_message(make_approval(run_id=None), None)
    assert message["blocks"][1]["text"]["text"] == "*Asked by* <@U0ASKER>"
    assert message["metadata"]["event_payload"] == {"approval_id": "apr_123"}
    assert_message(message)


@pytest.mark.parametrize(
    ("approval", "line"),
    [
        (decided(ApprovalState.APPROVED), f":white_check_mark: Approved by <@U0BOB> at {AT_SLACK}"),
        (
            decided(ApprovalState.DECLINED, reason="customer not eligible"),
            ":x: Declined by <@U0BOB>: customer not eligible",
        ),
        (decided(ApprovalState.DECLINED), ":x: Declined by <@U0BOB>"),
        (
            decided(ApprovalState.DECLINED, decided_by="signoff", reason="expired"),
            f":hourglass: Expired (declined) at {AT_SLACK}",
        ),
        (
            decided(
                ApprovalState.DECLINED,
                decided_by="signoff",
                reason="withdrawn: run rolled back by U0OPS",
            ),
            ":leftwards_arrow_with_hook: Withdrawn: run rolled back by <@U0OPS>",
        ),
        (
            decided(
                ApprovalState.DECLINED,
                decided_by="signoff",
                reason="withdrawn: run cancelled (<!here>) by cli",
            ),
            ":leftwards_arrow_with_hook: Withdrawn: run cancelled (&lt;!here&gt;) by cli",
        ),
    ],
)
def test_decided_card(approval: Approval, line: str) -> None:
    message = card(approval)
    assert [b["type"] for b in message["blocks"]] == ["header", "section", "section", "context"]
    assert message["blocks"][0] == card()["blocks"][0]
    context = message["blocks"][-1]["elements"]
    assert context[0]["text"] == line
    assert context[1]["text"] == f"expires {AT_SLACK} · policy `refunds`"
    assert line in message["text"]
    assert_message(message)


def test_a_card_says_when_nobody_waits_for_its_answer() -> None:
    """Its waiter's heartbeat lapsed: said under the buttons while pending, and beside the
    outcome of an approval decided while nobody waited; nothing when someone waits."""
    waited = card(make_approval(waiter_until=AT))
    left = card(make_approval(waiter_left_at=AT))
    approved = card(decided(ApprovalState.APPROVED, waiter_left_at=AT - timedelta(minutes=5)))
    withdrawn = card(
        decided(
            ApprovalState.DECLINED,
            decided_by="signoff",
            reason="withdrawn: the agent stopped waiting",
            waiter_left_at=AT - timedelta(minutes=5),
        )
    )

    def texts(message: dict[str, Any]) -> list[str]:
        return [
            e["text"] for b in message["blocks"] if b["type"] == "context" for e in b["elements"]
        ]

    assert not any("waiting for this answer" in t for t in texts(waited))
    assert texts(left)[-1] == ":zzz: Nobody is waiting for this answer now"
    assert left["blocks"][-1]["type"] == "actions"  # it may still be decided
    assert texts(approved)[-1] == (
        ":zzz: Nobody was waiting for this answer: the call runs only if it is asked again"
    )
    assert ":leftwards_arrow_with_hook: Withdrawn: the agent stopped waiting" in texts(withdrawn)
    assert not any("waiting for this answer" in t for t in texts(withdrawn))


def test_quorum_approval_names_every_approver() -> None:
    approval = decided(ApprovalState.APPROVED, required_approvals=2)
    message = card(approval, votes=["U0ANN", "U0BOB"])
    assert message["blocks"][-1]["elements"][0]["text"].startswith(
        ":white_check_mark: Approved by <@U0ANN>, <@U0BOB> at"
    )


def test_edited_arguments_show_before_and_after() -> None:
    approval = decided(
        ApprovalState.APPROVED, approved_args={"order_id": "4471", "amount_cents": 2000}
    )
    fields = [f["text"] for f in card(approval)["blocks"][2]["fields"]]
    assert "*amount\u2060_\u2060cents*\n2000 (asked 2500)" in fields
    assert "*order\u2060_\u2060id*\n4471" in fields


def test_hostile_task_and_args_stay_text() -> None:
    approval = make_approval(
        tool=HOSTILE,
        args={HOSTILE: HOSTILE, "amount": HOSTILE, "nested": {"x": HOSTILE}},
        policy=HOSTILE,
        requested_by="U0ASKER",
    )
    run = make_run(task=HOSTILE)
    message = cards.approval_message(
        approval, run, votes=[HOSTILE, "U0ANN"], rule=HOSTILE, reversibility=HOSTILE
    )
    assert_inert(message)
    assert_message(message)
    about = message["blocks"][1]["text"]["text"]
    assert "&lt;!channel&gt; &lt;!here&gt;" in about
    assert "&lt;https://evil|bank.com&gt;" in about
    assert "\\x1b[31m" in about
    for note in (cards.decision_note(approval), cards.run_note(run)):
        assert_inert({"text": note, "blocks": []})
    declined = decided(ApprovalState.DECLINED, reason=HOSTILE, args=approval.args)
    assert_inert(cards.approval_message(declined, run))
    assert_inert({"text": cards.decision_note(declined), "blocks": []})


def test_huge_card_stays_within_limits() -> None:
    approval = make_approval(args=huge_args(), required_approvals=3, escalated=True, reason=HUGE)
    run = make_run(task="t" * 10_000)
    options: dict[str, Any] = {
        "votes": [f"U{i:04d}" for i in range(100)],
        "rule": HUGE,
        "escalate_to": [f"S{i:04d}" for i in range(100)],
        "reversibility": HUGE,
        "compensator": HUGE,
        "allow_edit": True,
    }
    pending = cards.approval_message(approval, run, **options)
    assert_message(pending)
    fields = pending["blocks"][2]["fields"]
    assert len(fields) == 10
    assert fields[-1]["text"].startswith("*+93 more*\n")
    assert "more characters)" in fields[2]["text"]
    for state in (ApprovalState.APPROVED, ApprovalState.DECLINED):
        edited = approval.model_copy(
            update={"state": state, "decided_by": "U0BOB", "approved_args": huge_args(3)}
        )
        assert_message(cards.approval_message(edited, run, **options))


def test_long_ids_stay_within_limits() -> None:
    approval = make_approval(id="a" * 128, run_id="r" * 128, requested_by="U" + "A" * 300)
    message = cards.approval_message(approval, make_run(id="r" * 128), allow_edit=True)
    assert_message(message)
    assert message["blocks"][-1]["elements"][0]["value"] == "a" * 128


# the card's thread


def test_decision_notes_tell_the_requester() -> None:
    action = "`issue_refund 2500 cents on 4471`"
    assert cards.decision_note(decided(ApprovalState.APPROVED)) == (
        f"<@U0ASKER> your request {action} was approved by <@U0BOB>."
    )
    assert cards.decision_note(decided(ApprovalState.DECLINED, reason="no")) == (
        f"<@U0ASKER> your request {action} was declined by <@U0BOB>: no"
    )
    expired = decided(ApprovalState.DECLINED, reason="expired", requested_by=None)
    assert cards.decision_note(expired) == (
        f"The request {action} expired without a decision and was declined."
    )


def test_reminder_and_escalation() -> None:
    reminder = cards.reminder_message(
        make_approval(), reminders_sent=2, escalated=False, escalate_to=["S0OPS"]
    )
    assert reminder["text"] == (
        f":alarm_clock: Reminder 2: `issue_refund 2500 cents on 4471` still waits for a decision. "
        f"It expires {AT_SLACK}."
    )
    assert_message(reminder)
    escalation = cards.reminder_message(
        make_approval(), reminders_sent=3, escalated=True, escalate_to=["S0OPS", "U0BOSS", "x"]
    )
    assert escalation["text"].startswith(":mega: <!subteam^S0OPS> <@U0BOSS> x: ")
    huge = cards.reminder_message(
        make_approval(args=huge_args()),
        reminders_sent=1,
        escalated=True,
        escalate_to=[HOSTILE] * 100,
    )
    assert_message(huge)
    assert_inert(huge)


DECLINED_REFUND = Approval(
    id="ap-d",
    tool="issue_refund",
    args={},
    run_id="r1",
    state="declined",
    decided_by="U0BOB",
    reason="not eligible <!here>",
)
EXPIRED_REFUND = DECLINED_REFUND.model_copy(update={"decided_by": "signoff", "reason": "expired"})


@pytest.mark.parametrize(
    ("changes", "approvals", "note"),
    [
        (
            {"status": RunStatus.DONE, "stop_reason": "answered"},
            [],
            ":white_check_mark: Run `r1` ended at step 3: done.",
        ),
        (
            {"status": RunStatus.DONE, "stop_reason": "declined"},
            [DECLINED_REFUND],
            ":no_entry_sign: Run `r1` ended at step 3: declined (`issue_refund` was declined "
            "by <@U0BOB>: not eligible &lt;!here&gt;).",
        ),
        (
            {"status": RunStatus.DONE, "stop_reason": "expired"},
            [EXPIRED_REFUND],
            ":hourglass: Run `r1` ended at step 3: expired (`issue_refund` was not decided "
            "before its deadline).",
        ),
        (
            {
                "status": RunStatus.DONE,
                "stop_reason": "tool_failed",
                "error": "delete_customer: CrmUnavailable: the CRM answered 503",
            },
            [],
            # (an underscore in mrkdwn text is kept from starting italics: word joiners)
            ":x: Run `r1` ended at step 3: failed (delete\u2060_\u2060customer: CrmUnavailable: "
            "the CRM answered 503).",
        ),
        (
            {"status": RunStatus.FAILED, "stop_reason": "error", "error": "boom <!here>"},
            [],
            ":x: Run `r1` ended at step 3: failed (boom &lt;!here&gt;).",
        ),
        (
            {"status": RunStatus.CANCELLED},
            [],
            ":octagonal_sign: Run `r1` ended at step 3: cancelled.",
        ),
        (
            {"status": RunStatus.FAILED, "stop_reason": "rolled_back"},
            [],
            ":leftwards_arrow_with_hook: Run `r1` was rolled back to step 3.",
        ),
    ],
)
def test_run_notes(changes: dict[str, Any], approvals: list[Approval], note: str) -> None:
    """One sentence per way a run ends; only `done` has a check mark."""
    assert cards.run_note(make_run(id="r1", **changes), approvals) == note
    assert (":white_check_mark:" in note) == (changes.get("stop_reason") == "answered")


# pages


def test_in_doubt_page_says_how_to_settle_it() -> None:
    message = page_cards.page_message(a_page(), make_run(), args={"to": "customer@example.com"})
    header, body, fields, settle, context, actions = message["blocks"]
    assert header["text"]["text"] == "Needs a human: send_email in run order-4471"
    assert body["text"]["text"].startswith("*`send_email` may or may not have happened.*")
    assert fields["fields"][0]["text"] == "*to*\ncustomer@example.com"
    assert settle["text"]["text"] == (
        "*To settle it:*\n```"
        "signoff runs resolve order-4471 call_2 --happened --by &lt;you&gt;\n"
        "signoff runs resolve order-4471 call_2 --did-not-happen --by &lt;you&gt;\n"
        "signoff runs resume order-4471```"
    )
    assert context["elements"][0]["text"] == "reason `in_doubt` · call `call_2`"
    assert actions["block_id"] == "page:pg_order-4471_call_2_in_doubt"
    assert [(b["action_id"], b["value"]) for b in actions["elements"]] == [
        ("acknowledge", "pg_order-4471_call_2_in_doubt")
    ]
    assert message["metadata"] == {
        "event_type": "signoff_page",
        "event_payload": {"page_id": "pg_order-4471_call_2_in_doubt"},
    }
    assert_message(message)


def test_page_can_offer_resolve_buttons() -> None:
    message = page_cards.page_message(a_page(), None, allow_resolve=True)
    ids = [b["action_id"] for b in message["blocks"][-1]["elements"]]
    assert ids == ["acknowledge", "resolve_happened", "resolve_did_not_happen"]


def test_uncompensatable_page_points_at_show() -> None:
    page = a_page(reason="uncompensatable", detail="send_email is irreversible")
    message = page_cards.page_message(page, make_run())
    assert "*To settle it:*\n```signoff runs show order-4471```" in mrkdwn_texts(message)
    assert "cannot be undone automatically" in message["blocks"][1]["text"]["text"]


def test_acknowledged_page_has_no_button() -> None:
    page = a_page(acknowledged_by="U0BOB", acknowledged_at=AT)
    message = page_cards.page_message(page, make_run())
    assert all(b["type"] != "actions" for b in message["blocks"])
    assert message["blocks"][-1]["elements"][0]["text"] == (
        f":eyes: Acknowledged by <@U0BOB> at {AT_SLACK}"
    )


def test_hostile_and_huge_page() -> None:
    page = a_page(
        id="pg_" + "p" * 200,
        call_id=HOSTILE + "c" * 5000,
        tool=HOSTILE,
        detail=HUGE,
        reason=HOSTILE,
    )
    message = page_cards.page_message(page, make_run(task=HOSTILE * 100), args=huge_args())
    assert_message(message)
    assert_inert(message)
    in_doubt = page_cards.page_message(
        a_page(call_id=HOSTILE, detail=HUGE), make_run(task=HUGE), args=huge_args()
    )
    assert_message(in_doubt)
    assert_inert(in_doubt)
    resolve = "signoff runs resolve order-4471 '&lt;!channel&gt; &lt;!here&gt;"
    assert any(resolve in text for text in mrkdwn_texts(in_doubt))  # the call id, quoted


# modals


def test_decline_modal() -> None:
    view = replies.decline_modal(make_approval())
    assert view["type"] == "modal"
    assert view["callback_id"] == "decline_reason"
    assert view["private_metadata"] == "apr_123"
    reason = view["blocks"][-1]
    assert reason["type"] == "input"
    assert reason["block_id"] == "reason"
    assert reason["element"]["action_id"] == "reason"
    assert reason["optional"] is False
    assert_view(view)


def test_edit_modal_prefills_pretty_json() -> None:
    view = replies.edit_modal(make_approval())
    assert view["callback_id"] == "edit_args"
    assert view["private_metadata"] == "apr_123"
    editor = view["blocks"][-1]
    assert (editor["block_id"], editor["element"]["action_id"]) == ("args", "args")
    assert editor["element"]["multiline"] is True
    initial = editor["element"]["initial_value"]
    assert initial == '{\n  "order_id": "4471",\n  "amount_cents": 2500\n}'
    assert json.loads(initial) == make_approval().args
    assert_view(view)


def test_edit_modal_for_args_too_long_to_edit() -> None:
    view = replies.edit_modal(make_approval(args=huge_args()))
    assert "submit" not in view
    assert all(b["type"] != "input" for b in view["blocks"])
    assert_view(view)
    assert_view(replies.decline_modal(make_approval(args=huge_args(), run_id="r" * 3000)))


# /runs replies


def assert_ephemeral(reply: dict[str, Any]) -> None:
    assert reply["response_type"] == "ephemeral"
    assert_message(reply)


def test_help_lists_every_subcommand() -> None:
    reply = replies.runs_help()
    assert_ephemeral(reply)
    text = reply["blocks"][0]["text"]["text"]
    for command in ("status &lt;id&gt;", "list [status]", "pending", "history", "cancel"):
        assert f"`/runs {command}" in text
    assert "<" not in reply["text"]


def test_unknown_command_answers_with_help() -> None:
    reply = replies.unknown_command("frobnicate <!channel>")
    assert_ephemeral(reply)
    assert reply["blocks"][0]["text"]["text"] == (
        "I don't know `/runs frobnicate &lt;!channel&gt;`."
    )
    assert reply["blocks"][1] == replies.runs_help()["blocks"][0]
    assert_ephemeral(replies.unknown_command(HUGE))


def test_not_found_and_refusal() -> None:
    assert replies.not_found("run", "nope")["text"] == "No run `nope`."
    assert_ephemeral(replies.not_found("run", HUGE))
    refused = replies.refusal("Run <!here> is done already; nothing changed.")
    assert refused["text"] == "Run &lt;!here&gt; is done already; nothing changed."
    assert_ephemeral(refused)
    assert replies.refusal("<@U0BOB> decided", escaped=True)["text"] == "<@U0BOB> decided"
    assert_ephemeral(replies.refusal(HUGE))


def test_run_status() -> None:
    page = a_page()
    reply = replies.run_status(make_run(), [make_approval()], [page])
    assert_ephemeral(reply)
    overview = reply["blocks"][1]["text"]["text"]
    assert "*Status:* waiting\u2060_\u2060approval · *step* 3" in overview
    assert "*Usage:* steps 3 of 10 · input tokens 1,200 · output tokens 300" in overview
    assert "cost $0.0123 of $1.00" in overview
    types = [b["type"] for b in reply["blocks"]]
    assert types == ["header", "section", "section", "section", "actions", "section", "section"]
    assert "amount\u2060_\u2060cents" not in reply["blocks"][3]["text"]["text"]
    assert "`amount_cents` 2500" in reply["blocks"][3]["text"]["text"]
    assert reply["blocks"][4]["block_id"] == "approval:apr_123"


def test_run_status_with_huge_inputs() -> None:
    run = make_run(task=HUGE, error=HUGE, agent=HOSTILE)
    approvals = [make_approval(id=f"apr_{i}", args=huge_args(20)) for i in range(500)]
    pages = [a_page(id=f"pg_{i}", detail=HUGE, tool=HOSTILE) for i in range(500)]
    reply = replies.run_status(run, approvals, pages)
    assert_ephemeral(reply)
    assert_inert(reply)


def test_run_list() -> None:
    reply = replies.run_list([make_run(), make_run(id="r2")], status="waiting_approval", more=0)
    assert_ephemeral(reply)
    lines = reply["blocks"][1]["text"]["text"].split("\n")
    assert lines[0].startswith("`order-4471` · *waiting\u2060_\u2060approval* · step 3")
    assert len(lines) == 2
    empty = replies.run_list([], status="done", more=0)
    assert empty["text"] == "No runs with status done."


def test_run_list_cuts_and_counts_the_rest() -> None:
    runs = [make_run(id=f"run-{i}", task=HUGE, agent=HOSTILE) for i in range(500)]
    reply = replies.run_list(runs, status=HOSTILE, more=7)
    assert_ephemeral(reply)
    assert_inert(reply)
    rows = sum(b["text"]["text"].count("\n") + 1 for b in reply["blocks"][1:-1])
    assert rows == 40
    assert reply["blocks"][-1]["elements"][0]["text"] == "…and 467 more"


def test_pending_list_has_the_card_buttons() -> None:
    reply = replies.pending_list([make_approval(), make_approval(id="apr_2")], more=0)
    assert_ephemeral(reply)
    actions = [b for b in reply["blocks"] if b["type"] == "actions"]
    assert [a["block_id"] for a in actions] == ["approval:apr_123", "approval:apr_2"]
    assert [b["action_id"] for b in actions[0]["elements"]] == ["approve", "ask", "decline"]
    plain_card = card(allow_edit=False, reversibility=None, compensator=None)
    assert actions[0]["elements"] == plain_card["blocks"][-1]["elements"]
    assert replies.pending_list([], more=0)["text"] == "Nothing waits for your decision."


def test_pending_list_with_huge_inputs() -> None:
    approvals = [
        make_approval(id=f"apr_{i}", args=huge_args(10), requested_by=HOSTILE) for i in range(500)
    ]
    reply = replies.pending_list(approvals, more=3)
    assert_ephemeral(reply)
    assert_inert(reply)
    assert reply["blocks"][-1]["elements"][0]["text"] == "…and 495 more"


def test_run_history() -> None:
    checkpoints = [
        Checkpoint.opening("r1", [Message(role="user", content="Refund")]),
        a_checkpoint(
            1,
            1,
            RunStatus.WAITING_APPROVAL,
            Message(
                role="assistant",
                tool_calls=(ToolCall(id="c1", name="issue_refund"),),
            ),
            run_id="r1",
            stop_reason="waiting_approval",
        ),
    ]
    reply = replies.run_history(make_run(id="r1"), checkpoints)
    assert_ephemeral(reply)
    assert reply["blocks"][1]["text"]["text"].split("\n") == [
        "#0 · step 0 · running · snapshot of 1 messages",
        "#1 · step 1 · waiting\u2060_\u2060approval · called issue\u2060_\u2060refund",
    ]


def test_run_history_with_huge_inputs() -> None:
    calls = tuple(ToolCall(id=f"c{i}", name=HOSTILE + "n" * 1000) for i in range(100))
    messages = (
        Message(role="assistant", tool_calls=calls),
        *(Message(role="tool", tool_call_id=f"c{i}", content=HUGE) for i in range(100)),
    )
    checkpoints = [
        Checkpoint(run_id="r1", seq=i, step=i, status=RunStatus.RUNNING, messages=messages)
        for i in range(500)
    ]
    reply = replies.run_history(make_run(id="r1"), checkpoints)
    assert_ephemeral(reply)
    assert_inert(reply)
    assert reply["blocks"][1]["elements"][0]["text"].startswith("460 earlier checkpoints")


# the App Home tab


NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def home(**kwargs: Any) -> dict[str, Any]:
    options: dict[str, Any] = {"pending": [], "pages": [], "requests": [], "decisions": []}
    return home_view(**(options | {"now": NOW, "resolver": False} | kwargs))


def test_home_view() -> None:
    asked = make_approval(created_at=NOW - timedelta(minutes=12))
    view = home(
        pending=[asked],
        pages=[a_page()],
        requests=[make_approval(id="apr_mine", created_at=NOW - timedelta(hours=3))],
        decisions=[decided(ApprovalState.APPROVED, id="apr_0")],
        resolver=True,
    )
    assert view["type"] == "home"
    assert_view(view)
    actions = [b for b in view["blocks"] if b["type"] == "actions"]
    assert [a["block_id"] for a in actions] == [
        "approval:apr_123",
        "page:pg_order-4471_call_2_in_doubt",
    ]
    lines = mrkdwn_texts({"blocks": view["blocks"]})
    assert any("waiting 12m" in t for t in lines)
    assert any("pending · waiting 3h" in t for t in lines)
    assert any("approved by <@U0BOB>" in t for t in lines)


def test_a_page_has_settle_buttons_only_for_a_resolver() -> None:
    view = home(pages=[a_page()], resolver=False)
    assert not [b for b in view["blocks"] if b["type"] == "actions"]
    assert any("opened" in t for t in mrkdwn_texts({"blocks": view["blocks"]}))


def test_empty_home_view() -> None:
    view = home()
    assert_view(view)
    texts = mrkdwn_texts({"blocks": view["blocks"]})
    assert texts == [
        "Nothing waits for your decision.",
        "Nothing you asked for.",
        "No decisions yet.",
    ]


def test_home_view_with_huge_inputs() -> None:
    approvals = [make_approval(id=f"apr_{i}", args=huge_args(10)) for i in range(500)]
    recent = [
        decided(ApprovalState.DECLINED, id=f"apr_d{i}", reason=HUGE, args=huge_args(5))
        for i in range(500)
    ]
    pages = [a_page(id=f"pg_{i}", detail=HUGE) for i in range(500)]
    view = home(pending=approvals, requests=approvals, decisions=recent, pages=pages)
    assert_view(view)
    assert_inert({"blocks": view["blocks"]})


def test_home_shows_the_context_and_the_agents_reason_masked() -> None:
    asked = make_approval(
        context={"order_total": "$25.00", "card": "4242"},
        sensitive=("card",),
        agent_reason="The customer asked twice.",
    )
    lines = " ".join(t for b in home(pending=[asked])["blocks"] for t in _texts(b))
    assert "order total: $25.00" in lines
    assert "The customer asked twice." in lines
    assert "4242" not in lines


def _texts(block: dict[str, Any]) -> list[str]:
    found = [e.get("text") for e in block.get("elements", []) if isinstance(e, dict)]
    return [t for t in found if isinstance(t, str)]
