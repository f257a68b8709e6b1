"""The narrow ports the modules below the facade depend on, instead of the classes that
implement them: the run loop asks for approvals through `Approvals`, ending and rollback
withdraw them through `Withdrawals` (both are `runtime.approvals.desk.ApprovalDesk`), and
new approvals pass through the learned rules as `LearnedRules` (`RuleBook`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from typing import Protocol

from runtime.approvals import Policy
from store import Approval
from store import Run
from store.spend import SpendPlan


class Withdrawals(Protocol):
    """What ending and rollback ask of approvals: withdraw a run's pending ones."""

    async def withdraw(self, run_id: str, *, by: str, reason: str) -> None:
        """Decline the run's pending approvals: it no longer waits (cancelled, rolled back)."""
        ...


class Approvals(Withdrawals, Protocol):
    """What the run loop asks of approvals: a new one for a call, shown with what an
    approver must know, and withdrawing a run's pending ones."""

    def new_approval(
        self,
        *,
        tool: str,
        args: dict[str, Any],
        run: Run | None = None,
        call_id: str | None = None,
        idempotency_key: str | None = None,
        sensitive: tuple[str, ...] = (),
        unasked: bool = False,
        limits: Mapping[str, Mapping[str, int]] | None = None,
    ) -> Approval:
        """A pending approval of the call under its policy (decided at once by a rule);
        `unasked`: of a tool that needs no approval (approved at once, within its limits)."""
        ...

    def policy_of(self, approval: Approval) -> Policy:
        """The policy an approval is decided under (its rule's, as made)."""
        ...

    async def annotate(self, approval: Approval) -> Approval:
        """The approval naming a possible duplicate request and an earlier effect that used
        its key with other arguments."""
        ...

    def gated(self, tool: str) -> bool:
        """Whether calls of a tool that needs no approval pass the gate (a limit counts them)."""
        ...

    async def limit_values(
        self, tool: str, args: dict[str, Any], run: Run | None
    ) -> dict[str, dict[str, int]] | None:
        """What the rules of the tool's policy see of its limits, if they read any."""
        ...

    async def plan_spend(self, approval: Approval, run: Run | None) -> SpendPlan | None:
        """How a new approval is admitted in its transaction (limits, envelopes)."""
        ...


class LearnedRules(Protocol):
    """The rules people made from decisions (`runtime.approvals.rule_book.RuleBook`)."""

    async def apply(self, approval: Approval, run: Run | None) -> Approval: ...
