"""What the HTTP API (and its callbacks) answer with for an approval and a run: the fields a
caller may see, as JSON. The CLI's `--json` and the console show a run in the same shape, so
scripts and pages see one view: a module of no surface, which each of them uses."""

from __future__ import annotations

from typing import Any

from bot import words
from bot.reading import limit_lines
from runtime import Runtime
from runtime.records import Approval
from runtime.records import ApprovalState
from runtime.records import Run

APPROVAL_FIELDS = {
    "id",
    "cool_off",
    "cool_off_until",
    "cool_off_by",
    "ran_outcome",
    "undo_until",
    "undoing_by",
    "undo_error",
    "undone_by",
    "undone_at",
    "context",
    "context_error",
    "agent_reason",
    "reasked",
    "question",
    "tool",
    "args",
    "approved_args",
    "policy",
    "state",
    "run_id",
    "call_id",
    "decided_by",
    "decided_for",
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
    "waiter_until",
    "waiter_left_at",
}


def approval_view(approval: Approval, *, resume_state: bool = False) -> dict[str, Any]:
    """The approval for an API client: sensitive arguments masked; `rule` says which approval
    rule it was made under, `authority` who may decide it (recorded when it was asked).
    With `resume_state` (reading one approval: GET and its wait),
    the state its asker keeps there, whole: it is the client's own, not shown to a person."""
    rule = approval.rule.summary if approval.rule else None
    # `waiter_note`: nobody waits for a pending one now, or nobody did when it was approved.
    said = {
        "rule": rule,
        "edited": approval.edited,
        "waiter_note": words.waiter_note(approval),
        "authority": Runtime.authority(approval),
    }
    view = said | approval.shown().model_dump(mode="json", include=APPROVAL_FIELDS)
    view["limits"] = limits_view(approval)
    view["envelope_id"] = approval.rule.envelope_id if approval.rule else None
    if resume_state:
        view["resume_state"] = approval.resume_state
    return view


def limits_view(approval: Approval) -> list[dict[str, Any]]:
    """Each limit the call counted against, as it stood when it was asked, with its line."""
    match = approval.rule
    states = match.limits if match else ()
    return [
        {
            "name": state.name,
            "mode": state.mode,
            "outcome": state.outcome,
            "used": state.used,
            "amount": state.amount,
            "after": state.after,
            "max": state.max,
            "held": state.held,
            "error": state.error,
            "line": line,
        }
        for state, line in zip(states, limit_lines(approval), strict=True)
    ]


async def run_view(rt: Runtime, run: Run) -> dict[str, Any]:
    """A run as `GET /v1/runs/{id}` shows it: its record without the worker's lease, what it
    waits for (with the votes so far), each decided call, and how it ended."""
    pending = await rt.approvals(run.id, state=ApprovalState.PENDING)
    view = run.model_dump(mode="json", exclude={"lease_owner", "lease_expires_at"})
    view["pending_approvals"] = [await voted_view(rt, a) for a in pending]
    view["calls"] = [t.as_dict() for t in await rt.call_trail(run.id)]  # proposed, approved, ran
    return view | await run_outcome(rt, run)


async def voted_view(rt: Runtime, approval: Approval) -> dict[str, Any]:
    """The approval with who approved it so far (a quorum fills up vote by vote)."""
    return approval_view(approval) | {"votes": await rt.votes(approval.id)}


async def run_outcome(rt: Runtime, run: Run) -> dict[str, Any]:
    """How a run ended, for its view: its outcome (`bot.words.OUTCOMES`) and the sentence
    that says it, the final answer and every approval it asked for,
    oldest first, with its state, who decided when and why, the proposed and approved
    arguments, and the votes so far."""
    approvals = await rt.approvals(run.id)
    ended = words.outcome_of(run) is not None
    return {
        "outcome": words.outcome_of(run),
        "ended": words.run_ended(run, declined=words.ended_by(run, approvals)) if ended else None,
        "answer": await rt.answer(run),
        "approvals": [approval_view(a) | {"votes": await rt.votes(a.id)} for a in approvals],
    }
