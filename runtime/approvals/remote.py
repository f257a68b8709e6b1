"""Approvals asked for over the HTTP API by an agent on another stack: the request is
checked, then made once (an id names one request, so a client that retries asks its humans
once)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runtime import errors
from runtime.approvals.desk import ApprovalDesk
from runtime.approvals.naming import log_rule_decision
from runtime.deps import Deps
from runtime.runs import canonical_json
from store import Approval
from store import ApprovalState
from store import errors as store_errors


async def request_approval(
    deps: Deps,
    desk: ApprovalDesk,
    tool: str,
    args: dict[str, Any],
    *,
    approval_id: str | None = None,
    requested_by: str | None = None,
    policy: str | None = None,
    callback_url: str | None = None,
    sensitive: Sequence[str] = (),
    resume_state: str | None = None,
    requester_token: str | None = None,
) -> tuple[Approval, bool]:
    """(the approval, False) if `approval_id` names one already made for the same request.
    `resume_state` is not part of the request: a retry's (re-serialized, perhaps) is ignored
    and the first one kept; so is `requester_token` (the first asker's may withdraw it)."""
    _check_request(desk, tool, args, policy, sensitive)
    approval = desk.new_approval(
        tool=tool,
        args=args,
        approval_id=approval_id,
        requested_by=requested_by,
        policy=policy,
        callback_url=callback_url,
        sensitive=tuple(dict.fromkeys(sensitive)),
    ).model_copy(update={"resume_state": resume_state, "requester_token": requester_token})
    approval = await deps.with_learned_rule(approval, None)
    try:
        await deps.store.create_approval(approval)
    except store_errors.AlreadyExists:
        existing = await desk.get(approval.id)
        if _request_of(existing) != _request_of(approval):
            raise errors.InvalidRequest(
                f"approval {approval.id!r} exists already, for another request; an id "
                "names one request (tool, args, policy, requester, callback)"
            ) from None
        return existing, False
    if approval.state == ApprovalState.PENDING:
        await deps.announcer.approval_requested(approval, None)
    else:  # a rule approved or denied it at once; its callback, if any, is told so
        log_rule_decision(approval)
        await deps.announcer.approval_decided(approval, None)
    return approval, True


def _check_request(
    desk: ApprovalDesk,
    tool: str,
    args: dict[str, Any],
    policy: str | None,
    sensitive: Sequence[str],
) -> None:
    known = desk.policies.tools
    if policy is not None and policy != "default" and policy not in known:
        names = ", ".join(["default", *known])
        raise errors.InvalidRequest(f"no policy {policy!r}; the policies are: {names}")
    if not tool.strip():
        raise errors.InvalidRequest("an approval needs the tool (action) it is about")
    if tool in known and policy not in (None, tool):
        raise errors.InvalidRequest(
            f"{tool} has a policy of its own; a request cannot choose another ({policy!r})"
        )
    unknown = sorted(set(sensitive) - set(args))
    if unknown:
        raise errors.InvalidRequest(f"sensitive names no argument: {', '.join(unknown)}")


def _request_of(approval: Approval) -> tuple[object, ...]:
    """What a client asked for, compared strictly (JSON `1` is not `true`)."""
    return (
        approval.tool,
        canonical_json(approval.args),
        approval.policy,
        approval.requested_by,
        approval.callback_url,
        approval.sensitive,
    )
