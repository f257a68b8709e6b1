"""Approval rules as pure functions: a rule sets exactly what a policy sets; the policy a rule
chose survives the round trip through the record; the start-up check knows CEL's macros and
literals; the history table shows what a rule decided."""

from __future__ import annotations

from datetime import UTC
from datetime import datetime
from datetime import timedelta

import pytest
from pydantic import ValidationError
from rich.console import Console

from bot import views
from runtime.approvals.authority import asked
from runtime.approvals.policy import Policies
from runtime.approvals.policy import Policy
from runtime.approvals.routing import route
from runtime.approvals.rule_check import check
from runtime.approvals.rules import Facts
from runtime.approvals.rules import Rule
from store import Approval
from store import ApprovalState
from store import Checkpoint
from store import RunStatus

ARGS = {"amount_cents": "int", "order_id": "string", "items": ""}


def test_a_rule_can_set_everything_a_policy_sets() -> None:
    actions = {"when", "label", "auto_approve", "deny", "mode"}
    display_only = {"rules", "sensitive_results", "external"}  # not a rule's to set
    assert set(Rule.model_fields) - actions == set(Policy.model_fields) - display_only


def test_the_policy_a_rule_chose_survives_the_record() -> None:
    policies = Policies.model_validate(
        {
            "tools": {
                "pay": {
                    "rules": [
                        {
                            "when": "true",
                            "timeout": "2h",
                            "remind_every": "15m",
                            "approvers": ["U0ANN"],
                            "required_approvals": 2,
                        }
                    ]
                }
            }
        }
    )
    name, policy = policies.for_tool("pay")
    routed = route(name, policy, "pay", {}, Facts())

    assert routed.match is not None
    restored = Policy.model_validate(asked(name, routed, None).settings)
    assert restored.timeout == timedelta(hours=2)
    assert restored.remind_every == timedelta(minutes=15)
    assert (restored.approvers, restored.required_approvals) == (("U0ANN",), 2)


def test_a_rule_that_asks_no_one_cannot_name_approvers() -> None:
    with pytest.raises(ValidationError, match="never asks anyone has no use for approvers"):
        Rule.model_validate({"when": "true", "auto_approve": True, "approvers": ["U0ANN"]})


def test_a_tool_without_rules_of_its_own_uses_the_defaults_rules() -> None:
    policies = Policies.model_validate(
        {
            "default": {"rules": [{"when": "args.amount_cents < 5", "auto_approve": True}]},
            "tools": {"other": {"required_approvals": 2}},
        }
    )
    name, policy = policies.for_tool("other")

    assert route(name, policy, "other", {"amount_cents": 1}, Facts()).action == "auto_approve"


@pytest.mark.parametrize(
    "when",
    [
        "args.items.exists(i, i > 2)",  # a macro's variable is no unknown name
        "args.amount_cents in [1, 2, 3] && args.order_id.startsWith('A')",
        "args['amount_cents'] >= 10 && now > timestamp('2026-01-01T00:00:00Z')",
        "run.usage.cost > 1.5 && run.usage.steps < 10 && tool == 'pay'",
        "has(args.order_id) && args.order_id != null",
    ],
)
def test_sound_conditions_pass_the_start_up_check(when: str) -> None:
    assert check(when, "pay", ARGS) == []


def test_an_unknown_argument_by_index_is_found_too() -> None:
    assert check("args['amount'] > 1", "pay", ARGS) == [
        "pay has no argument 'amount' (its arguments: amount_cents, order_id, items)"
    ]


def test_a_comparison_inside_a_list_membership_is_checked() -> None:
    assert check("args.amount_cents in [1, 'two']", "pay", ARGS) == [
        "compares args.amount_cents (int) with 'two' (string); CEL never finds these equal or "
        "ordered"
    ]


def test_the_history_table_shows_a_call_a_rule_decided() -> None:
    at = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    policies = Policies.model_validate(
        {"tools": {"pay": {"rules": [{"when": "true", "auto_approve": True, "label": "all"}]}}}
    )
    name, policy = policies.for_tool("pay")
    match = route(name, policy, "pay", {}, Facts()).match
    approval = Approval(
        id="ap_1",
        tool="pay",
        args={"cents": 5},
        state=ApprovalState.APPROVED,
        decided_by="signoff",
        decided_at=at,
        rule=match,
        created_at=at,
    )
    checkpoint = Checkpoint(
        run_id="r1", seq=1, step=1, status=RunStatus.DONE, created_at=at + timedelta(seconds=1)
    )
    console = Console(width=200, record=True)

    console.print(views.history_table([checkpoint], [approval]))

    text = console.export_text()
    assert "pay(cents=5) approved: rule 1: all → approved at once" in text
    assert text.index("approved at once") < text.index("(status only)")
