"""What a person may do with an approval on the page and through e-mail links: asked of the
runtime with the decision's own checks (`Runtime.check_decider`: the approval's recorded
authority, groups resolved now, no self-approval), so the page refuses exactly what Slack
and the API refuse."""

from __future__ import annotations

from collections.abc import Sequence

from runtime import Runtime
from runtime import errors
from runtime.records import Approval
from runtime.records import ApprovalState

READ_LIMIT = 200
"""Pending approvals read to find a person's: the oldest waiting first."""


async def may(rt: Runtime, approval: Approval, person: str, decision: str) -> bool:
    if decision not in ("approved", "declined"):
        return False
    try:
        await rt.check_decider(approval, decision, person)  # type: ignore[arg-type]
    except errors.DecisionRefused:
        return False
    return True


async def actions(rt: Runtime, approval: Approval, person: str) -> tuple[str, ...]:
    """The decisions `person` may make on this approval here ("edit" and "asked" too)."""
    if approval.state != ApprovalState.PENDING:
        return ()
    found = [d for d in ("approved", "declined") if await may(rt, approval, person, d)]
    if "declined" in found:  # who may decline may ask the agent a question instead
        found.append("asked")
    policy = rt.policy_of(approval)
    if "approved" in found and policy.step_up:  # approved with a passkey, as proposed
        return tuple("passkey" if d == "approved" else d for d in found)
    if "approved" in found and policy.allow_edit and approval.required_approvals == 1:
        found.append("edit")
    return tuple(found)


async def pending_for(rt: Runtime, person: str) -> list[Approval]:
    """The pending approvals `person` may approve, oldest first."""
    waiting: Sequence[Approval] = await rt.queries.approvals(
        state=ApprovalState.PENDING, limit=READ_LIMIT
    )
    return [a for a in waiting if await may(rt, a, person, "approved")]
