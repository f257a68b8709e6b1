"""What a change tells people and auditors, written in the change's own transaction.

Each function here is a piece of a `store.core` body: it follows the statement that made a
change and yields the outbox rows (Slack cards, updates, thread notes, pages; rule 10) and
the audit events that change announces. They run inside the same transaction as the change,
on every backend, so a crash can delay a notification but never lose it, and a change that
rolls back announces nothing. (Until migration 0017 these were per-dialect triggers.)

A change that is not made (a compare-and-set that lost, a duplicate ignored) announces
nothing: every caller yields these only after the statement reported that it changed a row.
"""

from __future__ import annotations

from typing import Any

from store import rows
from store.body import Body
from store.body import Stmt
from store.records import Approval
from store.records import ApprovalState
from store.records import RunStatus

FINISHED = frozenset({RunStatus.DONE.value, RunStatus.FAILED.value, RunStatus.CANCELLED.value})
MASK = "[sensitive]"
UNDONE = "undone"
"""The stop reason of a run that ended, then had a call undone (`runtime.runs.StopReason`):
its checkpoint keeps the status, and the run's end is told again."""


def outbox(topic: str, subject_id: str, detail: dict[str, Any] | None = None) -> Stmt:
    """One outbox row; on PostgreSQL it also wakes the processes listening (at commit)."""
    params = {"topic": topic, "subject_id": subject_id, "detail": rows.dumps(detail or {})}
    return Stmt("enqueue_outbox", params)


def approval_created(approval: Approval, params: dict[str, Any]) -> Body[None]:
    """A new approval's audit event (asked, or approved or denied at once by a rule) and,
    when it asks someone, its card."""
    yield Stmt("insert_event", requested_event(approval, params))
    if approval.state == ApprovalState.PENDING:
        yield outbox("approval_requested", approval.id)
        settings = approval.authority.settings if approval.authority else {}
        yield from emails("email_requested", approval.id, addresses(settings))
    if approval.rule is not None and approval.rule.shadow:
        yield Stmt("insert_event", shadow_events(approval, params), "many")


def addresses(settings: dict[str, Any], *, escalated: bool = False) -> list[str]:
    """The approvers an approval's settings name by e-mail address (people outside Slack),
    with its escalation's once escalated: each is e-mailed (`bot.email`)."""
    named = list(settings.get("approvers") or ())
    if escalated and settings.get("escalate_to"):
        named.append(settings["escalate_to"])
    return list(dict.fromkeys(who.lower() for who in named if "@" in who))


def emails(
    topic: str, approval_id: str, to: list[str], detail: dict[str, Any] | None = None
) -> Body[None]:
    """One e-mail row per address: its own subject, so one address's outage or retries
    never hold up another's, and its reminder never goes out before its request."""
    for address in to:
        about = {"approval_id": approval_id, "to": address} | (detail or {})
        yield outbox(topic, f"email:{address}:{approval_id}", about)


def shadow_events(approval: Approval, params: dict[str, Any]) -> list[dict[str, Any]]:
    """What each rule, limit and envelope in shadow mode would have done with the call."""
    notes = approval.rule.shadow if approval.rule else ()
    return [
        {
            "at": params["created_at"],
            "actor": "signoff",
            "action": "shadow_decision",
            "run_id": approval.run_id,
            "approval_id": approval.id,
            "detail": rows.dumps(note.model_dump() | {"tool": approval.tool}),
        }
        for note in notes
    ]


def requested_event(approval: Approval, params: dict[str, Any]) -> dict[str, Any]:
    pending = approval.state == ApprovalState.PENDING
    detail: dict[str, Any] = {
        "tool": approval.tool,
        "policy": approval.policy,
        "call_id": approval.call_id,
        "args": masked(approval.args, approval.sensitive),
        "required_approvals": approval.required_approvals,
        "duplicate_of": approval.duplicate_of,
    }
    if approval.rule is not None:
        detail["rule"] = approval.rule.summary
        if approval.rule.limits:
            detail["limits"] = [state.model_dump(mode="json") for state in approval.rule.limits]
        if approval.rule.envelope_id:
            detail["envelope_id"] = approval.rule.envelope_id
    if approval.reason is not None:
        detail["reason"] = approval.reason
    if pending:
        actor, action = approval.requested_by or "unknown", "approval_requested"
    elif approval.state == ApprovalState.APPROVED:
        actor, action = approval.decided_by or "signoff", "approval_auto_approved"
    else:
        actor, action = approval.decided_by or "signoff", "approval_denied"
    return {
        "at": params["created_at"],
        "actor": actor,
        "action": action,
        "run_id": approval.run_id,
        "approval_id": approval.id,
        "detail": rows.dumps(detail),
    }


def masked(args: dict[str, Any], sensitive: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """A tool's arguments with those it marks sensitive (top-level names) masked."""
    if not sensitive:
        return args
    return {key: MASK if key in sensitive else value for key, value in args.items()}


def reminded(before: Any, *, reminders_sent: int, escalated: bool) -> Body[None]:
    """After a pending approval's reminder count or escalation changed (`before` is its row
    as it was): the thread note, and the audit event of an escalation."""
    escalating = escalated and not before["escalated"]
    if reminders_sent <= before["reminders_sent"] and not escalating:
        return
    detail = {"reminders_sent": reminders_sent, "escalated": escalating}
    yield outbox("approval_reminded", before["id"], detail)
    authority = rows.maybe_loads(before["authority"]) or {}
    to = addresses(authority.get("settings") or {}, escalated=escalated)
    yield from emails("email_reminded", before["id"], to, detail)
    if escalating:
        event = {
            "tool": before["tool"],
            "policy": before["policy"],
            "reminders_sent": reminders_sent,
        }
        params = {"run_id": before["run_id"], "approval_id": before["id"], "detail": event}
        yield Stmt("insert_escalation_event", params | {"detail": rows.dumps(event)})


def page_opened(params: dict[str, Any]) -> Body[None]:
    """A new page's audit event and its card in the on-call channel."""
    detail = {
        "page_id": params["id"],
        "call_id": params["call_id"],
        "tool": params["tool"],
        "reason": params["reason"],
    }
    event = {
        "at": params["created_at"],
        "actor": "signoff",
        "action": "page_opened",
        "run_id": params["run_id"],
        "approval_id": None,
        "detail": rows.dumps(detail),
    }
    yield Stmt("insert_event", event)
    yield outbox("page_opened", params["id"])


def run_status_changed(run_id: str, status: str) -> Body[None]:
    """A run that finished tells whoever started it."""
    if status in FINISHED:
        yield outbox("run_finished", run_id, {"status": status})
