"""Budgets: why a run must stop before its next model call, if it must."""

from __future__ import annotations

from enum import StrEnum

from store import Budget
from store import Usage


class StopReason(StrEnum):
    ANSWERED = "answered"
    STEP_BUDGET = "step_budget"
    TOKEN_BUDGET = "token_budget"
    COST_BUDGET = "cost_budget"
    WAITING_APPROVAL = "waiting_approval"
    CANCELLED = "cancelled"
    ERROR = "error"
    IN_DOUBT = "in_doubt"
    ROLLED_BACK = "rolled_back"
    CONFLICT = "conflict"
    """A call's key was used by an earlier effect with other arguments: it did not run."""
    ARGS_MISMATCH = "args_mismatch"
    """A call's arguments were not those approved: it did not run."""
    DECLINED = "declined"
    """The run answered, but a call it asked for was declined: it did not do what was asked."""
    EXPIRED = "expired"
    """The run answered, but a call's approval expired undecided."""
    TOOL_FAILED = "tool_failed"
    """The run answered, but a tool it called failed (raised): the run's error says which."""
    COOL_OFF_CANCELLED = "cool_off_cancelled"
    """The run answered, but a call it asked for was cancelled in its cool-off: it never ran."""
    UNDONE = "undone"
    """The run ended, then a call it made was undone (its compensator ran): taken back. The
    store tells the end again on it (`store.announce.UNDONE`)."""


BUDGET_REASONS = frozenset(
    {StopReason.STEP_BUDGET, StopReason.TOKEN_BUDGET, StopReason.COST_BUDGET}
)


def exhausted(budget: Budget, usage: Usage) -> StopReason | None:
    """The budget that is used up, or None while there is room for another step."""
    if budget.max_steps is not None and usage.steps >= budget.max_steps:
        return StopReason.STEP_BUDGET
    if budget.max_input_tokens is not None and usage.input_tokens >= budget.max_input_tokens:
        return StopReason.TOKEN_BUDGET
    if budget.max_output_tokens is not None and usage.output_tokens >= budget.max_output_tokens:
        return StopReason.TOKEN_BUDGET
    if budget.max_cost is not None and usage.cost >= budget.max_cost:
        return StopReason.COST_BUDGET
    return None


def would_exceed(budget: Budget, usage: Usage, next_call: Usage) -> StopReason | None:
    """The budget the next call would overrun, judged on what it will use at least."""
    after = usage + next_call
    if budget.max_input_tokens is not None and after.input_tokens > budget.max_input_tokens:
        return StopReason.TOKEN_BUDGET
    if budget.max_output_tokens is not None and after.output_tokens > budget.max_output_tokens:
        return StopReason.TOKEN_BUDGET
    if budget.max_cost is not None and after.cost > budget.max_cost:
        return StopReason.COST_BUDGET
    return None


def watches_usage(budget: Budget) -> bool:
    """Whether the budget limits tokens or cost (so the next call is worth estimating)."""
    limits = (budget.max_input_tokens, budget.max_output_tokens, budget.max_cost)
    return any(limit is not None for limit in limits)
