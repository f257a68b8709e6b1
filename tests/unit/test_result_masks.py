"""`sensitive_results`: which result fields a policy masks, and how a result, a transcript's
tool message and an audit event read with them masked (the records themselves unchanged)."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError
from support.records import an_effect

from bot.masking import ResultMasks
from bot.masking import masked_fields
from runtime.approvals.policy import Policies
from runtime.records import AuditEvent
from runtime.records import Message
from runtime.records import Reversibility

POLICIES = Policies.model_validate(
    {
        "default": {"sensitive_results": ["token"]},
        "tools": {"issue_card": {"sensitive_results": ["card_number"]}},
    }
)


def test_a_tool_masks_the_default_policys_fields_and_its_own() -> None:
    assert POLICIES.sensitive_results("issue_card") == ("token", "card_number")
    assert POLICIES.sensitive_results("send_email") == ("token",)
    assert Policies().sensitive_results("issue_card") == ()


def test_a_field_is_masked_at_any_depth_and_nothing_else_changes() -> None:
    value = {"card_number": "5500", "cards": [{"card_number": "4111", "last4": "1111"}], "n": 1}
    assert masked_fields(value, ("card_number",)) == {
        "card_number": "[sensitive]",
        "cards": [{"card_number": "[sensitive]", "last4": "1111"}],
        "n": 1,
    }
    assert masked_fields("5500 as plain text", ("card_number",)) == "5500 as plain text"


def test_an_effect_and_a_tool_message_read_masked_while_the_records_stay_whole() -> None:
    masks = ResultMasks(POLICIES)
    effect = an_effect(
        tool="issue_card",
        args={},
        reversibility=Reversibility.IRREVERSIBLE,
        result={"card_number": "5500", "expires": "12/29"},
    )
    assert masks.effect(effect).result == {"card_number": "[sensitive]", "expires": "12/29"}
    assert effect.result["card_number"] == "5500"
    content = json.dumps({"card_number": "5500", "expires": "12/29"})
    message = Message(role="tool", tool_call_id="c", name="issue_card", content=content)
    assert json.loads(masks.message(message).content or "") == {
        "card_number": "[sensitive]",
        "expires": "12/29",
    }
    assert "5500" in (message.content or "")
    other = Message(role="tool", tool_call_id="d", name="lookup", content='{"card_number": "1"}')
    assert masks.message(other) == other  # not this tool's field


def test_an_audit_events_result_is_masked_by_its_calls_tool() -> None:
    event = AuditEvent(
        action="late_result",
        actor="w",
        run_id="r",
        detail={"call_id": "c", "result": {"card_number": "5500"}},
    )
    (shown,) = ResultMasks(POLICIES).events([event], {"c": "issue_card"})
    assert shown.detail["result"] == {"card_number": "[sensitive]"}
    assert event.detail["result"] == {"card_number": "5500"}


def test_a_single_name_instead_of_a_list_is_refused() -> None:
    with pytest.raises(ValidationError):
        Policies.model_validate({"tools": {"issue_card": {"sensitive_results": "card_number"}}})
