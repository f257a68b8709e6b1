"""Arguments a tool marks sensitive: declared against its parameters, masked wherever an
approval or effect is shown, and a masked value sent back in an edit means "as proposed"."""

from __future__ import annotations

from typing import Any

import pytest
from support.records import an_effect

from runtime import ToolContext
from runtime import errors
from runtime import tool
from store import Approval
from store.records import SENSITIVE_MASK
from store.records import masked


def pay(order_id: str, card_number: str, cvc: str, *, ctx: ToolContext) -> dict[str, Any]:
    return {}


def test_a_tool_names_its_sensitive_parameters() -> None:
    declared = tool(description="Pay.", effect="irreversible", sensitive=["card_number", "cvc"])(
        pay
    )
    assert declared.sensitive == ("card_number", "cvc")


@pytest.mark.parametrize(
    ("sensitive", "message"),
    [(["pin"], "names no parameter of the tool: pin"), ("cvc", "a list of argument names")],
)
def test_a_sensitive_name_that_is_no_parameter_is_refused(sensitive: Any, message: str) -> None:
    with pytest.raises(errors.DefinitionError, match=message):
        tool(description="Pay.", effect="irreversible", sensitive=sensitive)(pay)


def test_approvals_and_effects_show_sensitive_arguments_masked() -> None:
    args = {"order_id": "A1", "card_number": "4111111111111111", "cvc": "123"}
    approval = Approval(
        id="ap_1",
        tool="pay",
        args=args,
        approved_args=args | {"order_id": "A2"},
        sensitive=("card_number", "cvc"),
    )
    shown = approval.shown()
    assert shown.args == {"order_id": "A1", "card_number": SENSITIVE_MASK, "cvc": SENSITIVE_MASK}
    assert shown.approved_args == {
        "order_id": "A2",
        "card_number": SENSITIVE_MASK,
        "cvc": SENSITIVE_MASK,
    }
    assert approval.args == args  # the record keeps them whole, for the tool
    effect = an_effect(tool="pay", args=args, reversibility="irreversible", sensitive=("cvc",))
    assert effect.shown().args == args | {"cvc": SENSITIVE_MASK}
    assert masked(args, ()) is args
