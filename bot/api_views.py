"""What the HTTP API (and its callbacks) answer with for an approval: the fields a caller may
see, as JSON."""

from __future__ import annotations

from typing import Any

from store import Approval

APPROVAL_FIELDS = {
    "id",
    "tool",
    "args",
    "approved_args",
    "policy",
    "state",
    "run_id",
    "call_id",
    "decided_by",
    "decided_at",
    "reason",
    "requested_by",
    "deadline",
    "required_approvals",
    "duplicate_of",
    "duplicate_args",
    "created_at",
    "args_digest",
    "approved_digest",
    "key_suffix",
    "conflict",
}


def approval_view(approval: Approval) -> dict[str, Any]:
    """The approval for an API client: sensitive arguments masked; `rule` says which approval
    rule it was made under."""
    rule = approval.rule.summary if approval.rule else None
    view = approval.shown().model_dump(mode="json", include=APPROVAL_FIELDS)
    return {"rule": rule, "edited": approval.edited} | view
