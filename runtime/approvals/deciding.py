"""A person's decision (docs/architecture.md rules 4, 9): the checks it passes (a decider the policy
names, not the requester approving themselves, an edit the policy allows that keeps the call's
identity, no conflict with an earlier effect under its key) and casting it, one store call that
records a vote, counts the quorum and decides in one transaction."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any
from typing import Literal

from runtime import errors
from runtime.approvals import recording
from runtime.approvals.binding import conflict_text
from runtime.approvals.binding import differences
from runtime.approvals.drafting import key_conflict
from runtime.approvals.naming import about
from runtime.approvals.naming import decided_text
from runtime.approvals.naming import log_ids
from runtime.approvals.policy import Directory
from runtime.approvals.policy import Policy
from runtime.deps import Deps
from runtime.permissions import approver
from runtime.tools import ToolArgumentError
from store import Approval
from store import ApprovalState
from store import Store
from store import errors as store_errors
from store.base import Ruling
from store.base import Voted
from store.digest import args_digest
from store.records import SENSITIVE_MASK
from store.records import masked

log = logging.getLogger("signoff.approvals")

Decision = Literal["approved", "declined", "asked"]
"""What a person answers: approve, decline, or ask the agent a question (`ASKED`)."""
ASKED = "asked"
"""A question back to the agent instead of a decision: recorded as a decline carrying the
question, which the agent reads as the tool's result; its next call is asked again."""
MAX_QUESTION = 2000


def check_request(decision: str, by: str, reason: str | None = None) -> None:
    if decision not in ("approved", "declined", ASKED):
        raise errors.InvalidRequest(
            f"a decision is 'approved', 'declined' or 'asked', not {decision!r}"
        )
    if not by:
        raise errors.InvalidRequest("a decision needs the deciding user's id")
    if decision == ASKED and not (reason or "").strip():
        raise errors.InvalidRequest("a question needs its text (the reason)")
    if decision == ASKED and len(reason or "") > MAX_QUESTION:
        raise errors.InvalidRequest(f"a question is at most {MAX_QUESTION} characters")


def answer(decision: Decision, reason: str | None) -> tuple[ApprovalState, str | None]:
    """The state a person's answer records, and the question it carries: a question back to
    the agent decides at once, as a decline carrying it."""
    if decision == ASKED:
        return ApprovalState.DECLINED, reason.strip() if reason else None
    return ApprovalState(decision), None


async def check_decider(
    approval: Approval,
    policy: Policy,
    decision: Decision,
    by: str,
    *,
    directory: Directory,
    now: datetime,
) -> None:
    """Refuse a decision on an approval no longer pending, by someone the policy does not
    name, or by the requester approving their own call when the policy forbids it."""
    if approval.state != ApprovalState.PENDING:
        raise errors.AlreadyDecided(decided_text(approval), approval=approval)
    if not await approver(approval, policy, by, directory, now):  # the permission table's
        raise errors.NotAnApprover(
            f"{by} is not an approver for {approval.tool} under policy {approval.policy!r}",
            approval=approval,
            by=by,
        )
    if decision == "approved" and by == approval.requested_by and not policy.allow_self_approval:
        raise errors.SelfApproval(
            f"{by} requested this action and policy {approval.policy!r} forbids self-approval",
            approval=approval,
            by=by,
        )


async def check_edit(
    deps: Deps, approval: Approval, policy: Policy, decision: Decision, args: dict[str, Any]
) -> dict[str, Any]:
    """The approved arguments of an edit, or why the edit is refused."""
    if decision != "approved":
        raise errors.EditRefused("arguments can only be edited when approving")
    if approval.required_approvals > 1:
        raise errors.EditRefused(
            f"policy {approval.policy!r} needs {approval.required_approvals} approvers; "
            "they vote on the proposed arguments, which cannot be edited"
        )
    if not policy.allow_edit:
        raise errors.EditRefused(f"policy {approval.policy!r} does not allow editing arguments")
    # Approvers see a sensitive argument masked; the mask sent back means "as proposed".
    args = {
        name: approval.args.get(name, value)
        if name in approval.sensitive and value == SENSITIVE_MASK
        else value
        for name, value in args.items()
    }
    tool = await deps.tool_for(approval)
    if tool is None:
        return args
    try:
        edited = tool.validate(args)
    except ToolArgumentError as exc:
        raise errors.EditRefused(str(exc)) from None
    identity = tool.business_id(approval.args)
    if tool.business_id(edited) != identity:
        changes = differences(approval.args, edited)
        named = [n for n, _, v in changes if tool.business_id({**approval.args, n: v}) != identity]
        changed = ", ".join(named or [n for n, _, _ in changes])
        raise errors.EditRefused(
            f"the edit changes what {approval.tool} acts on ({changed}: its identity, "
            "the key it runs under); decline and ask for a new request instead"
        )
    return edited


async def check_conflict(
    store: Store,
    approval: Approval,
    decision: Decision,
    approved_args: dict[str, Any] | None,
    separate: bool,
) -> str | None:
    """The key suffix of an approval as a separate effect; refuses a plain approval of a
    call whose key an earlier effect used with other arguments, and a needless separate."""
    if decision != "approved":
        if separate:
            raise errors.InvalidRequest("only an approval can be separate; a decline is not")
        return None
    args = approved_args if approved_args is not None else approval.args
    conflict = await key_conflict(store, approval, args_digest(args))
    if separate:
        if conflict is None and approval.conflict is None:
            raise errors.InvalidRequest(
                f"approval {approval.id}: no earlier effect used its key with other "
                "arguments, so there is nothing to be separate from; approve it as it is"
            )
        return approval.id
    if conflict is not None:
        raise errors.KeyConflict(
            conflict_text(conflict, args, approval.sensitive),
            conflict=conflict,
            asked=masked(args, approval.sensitive),
            approval=approval,
        )
    return None


async def cast(
    store: Store,
    approval: Approval,
    ruling: Ruling,
    *,
    open_only: bool,
    link_nonce: str | None = None,
) -> Voted:
    """Cast a checked decision: one store call, one transaction (a vote while a quorum
    forms, the decision once it is reached or at once)."""
    event = recording.decision_event(approval, ruling)
    try:
        voted = await store.cast_vote(
            approval.id, ruling, open_only=open_only, event=event, link_nonce=link_nonce
        )
    except store_errors.LinkUsed as exc:
        raise errors.LinkUsed(str(exc), approval=approval) from None
    except store_errors.OverLimit as exc:
        raise errors.EditRefused(f"{exc}; decline and ask for a new request instead") from None
    except store_errors.AlreadyDecided as exc:
        raise recording.already_decided(exc) from None
    except store_errors.Expired as exc:
        raise errors.ApprovalExpired(str(exc), approval=approval) from None
    except store_errors.AlreadyVoted as exc:
        waits = approval.required_approvals - int(exc.details.get("votes", 0))
        raise errors.AlreadyVoted(
            f"{ruling.by} already approved {approval.id}; it waits for {waits} more approver(s)",
            by=ruling.by,
        ) from None
    _log(voted, ruling.by)
    return voted


def _log(voted: Voted, by: str) -> None:
    approval = voted.approval
    if voted.votes:
        log.info(
            "%s: approved by %s, %d of %d approvals",
            about(approval),
            by,
            voted.votes,
            approval.required_approvals,
            extra=log_ids(approval, "voted"),
        )
    if approval.state != ApprovalState.PENDING:
        recording.log_decided(approval)
