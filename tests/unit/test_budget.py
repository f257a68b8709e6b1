"""Budgets: which limit a run's usage has reached, if any; usage adds up exactly."""

from __future__ import annotations

import pydantic
import pytest

from runtime import Budget
from runtime import StopReason
from runtime.runs.budget import BUDGET_REASONS
from runtime.runs.budget import exhausted
from runtime.runs.budget import watches_usage
from runtime.runs.budget import would_exceed
from store import Usage


def test_unlimited_budget_is_never_exhausted() -> None:
    assert exhausted(Budget(), Usage(steps=10**6, input_tokens=10**9, cost=10**6)) is None


@pytest.mark.parametrize(
    ("budget", "usage", "reason"),
    [
        (Budget(max_steps=8), Usage(steps=7), None),
        (Budget(max_steps=8), Usage(steps=8), StopReason.STEP_BUDGET),
        (Budget(max_steps=8), Usage(steps=9), StopReason.STEP_BUDGET),
        (Budget(max_input_tokens=100), Usage(input_tokens=99), None),
        (Budget(max_input_tokens=100), Usage(input_tokens=100), StopReason.TOKEN_BUDGET),
        (Budget(max_output_tokens=10), Usage(output_tokens=10), StopReason.TOKEN_BUDGET),
        (Budget(max_cost=0.5), Usage(cost=0.49), None),
        (Budget(max_cost=0.5), Usage(cost=0.5), StopReason.COST_BUDGET),
        (Budget(max_steps=0), Usage(), StopReason.STEP_BUDGET),
        (Budget(max_cost=0), Usage(), StopReason.COST_BUDGET),
    ],
)
def test_exhausted_names_the_limit_reached(
    budget: Budget, usage: Usage, reason: StopReason | None
) -> None:
    assert exhausted(budget, usage) == reason


def test_steps_are_checked_before_tokens_and_cost() -> None:
    budget = Budget(max_steps=1, max_input_tokens=1, max_cost=0.1)

    assert exhausted(budget, Usage(steps=1, input_tokens=5, cost=1)) == StopReason.STEP_BUDGET
    assert exhausted(budget, Usage(input_tokens=5, cost=1)) == StopReason.TOKEN_BUDGET


def test_usage_adds_up_without_float_drift() -> None:
    total = Usage()
    for _ in range(10):
        total = total + Usage(steps=1, input_tokens=3, output_tokens=2, cost=0.1)

    assert total == Usage(steps=10, input_tokens=30, output_tokens=20, cost=1.0)


def test_negative_limits_are_refused() -> None:
    with pytest.raises(pydantic.ValidationError):
        Budget(max_steps=-1)
    with pytest.raises(pydantic.ValidationError):
        Budget(max_cost=-0.01)


def test_budget_and_usage_are_immutable() -> None:
    with pytest.raises(pydantic.ValidationError):
        Budget(max_steps=1).max_steps = 2  # type: ignore[misc]


def test_every_stop_reason_has_its_wire_name() -> None:
    assert {r.value for r in StopReason} >= {
        "answered",
        "step_budget",
        "token_budget",
        "cost_budget",
        "waiting_approval",
        "cancelled",
        "error",
        "in_doubt",
    }
    assert {
        StopReason.STEP_BUDGET,
        StopReason.TOKEN_BUDGET,
        StopReason.COST_BUDGET,
    } == BUDGET_REASONS


@pytest.mark.parametrize(
    ("budget", "usage", "next_call", "reason"),
    [
        (Budget(max_input_tokens=100), Usage(input_tokens=60), Usage(input_tokens=40), None),
        (
            Budget(max_input_tokens=100),
            Usage(input_tokens=60),
            Usage(input_tokens=41),
            StopReason.TOKEN_BUDGET,
        ),
        (Budget(max_cost=0.5), Usage(cost=0.3), Usage(cost=0.2), None),
        (Budget(max_cost=0.5), Usage(cost=0.3), Usage(cost=0.21), StopReason.COST_BUDGET),
        (Budget(max_steps=1), Usage(steps=5), Usage(input_tokens=10**9), None),
        (Budget(), Usage(), Usage(input_tokens=10**9, cost=10**6), None),
    ],
)
def test_a_call_is_refused_only_if_what_it_uses_at_least_would_overrun_a_limit(
    budget: Budget, usage: Usage, next_call: Usage, reason: StopReason | None
) -> None:
    assert would_exceed(budget, usage, next_call) == reason
    assert watches_usage(budget) == any(
        (budget.max_input_tokens, budget.max_output_tokens, budget.max_cost is not None)
    )
