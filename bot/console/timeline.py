"""A run as the console shows it, built from its records by pure functions: one row per step
(the model's reply, its tool calls and results, each effect's classification and state, the
approvals and pages about them), the budget used against its limits, and what rolling back
to a step would do before anyone confirms it."""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from bot import reading
from bot import words
from runtime import Runtime
from runtime.approvals import call_trail
from runtime.approvals import differences
from runtime.approvals import said
from runtime.display import Display
from runtime.records import Approval
from runtime.records import AuditEvent
from runtime.records import Checkpoint
from runtime.records import Effect
from runtime.records import EffectStatus
from runtime.records import Message
from runtime.records import Page
from runtime.records import Reversibility
from runtime.records import Run

View = dict[str, Any]


def run_summary(
    run: Run, now: datetime, *, decided: bool = False, cooling: datetime | None = None
) -> View:
    """One line of the runs list: status (and its words: `label`), why it stopped, what it
    cost, how old it is. `decided`: parked with every approval decided (ready to resume);
    `cooling`: when the approved call it waits on ends its cool-off."""
    return {
        "id": run.id,
        "agent": run.agent,
        "task": run.task,
        "status": run.status.value,
        "label": words.state_of_run(run, decided=decided, cooling=cooling),
        "outcome": words.outcome_of(run),
        "stop_reason": run.stop_reason,
        "stop_words": words.STOP_REASONS.get(run.stop_reason or "", run.stop_reason),
        "step": run.step,
        "cost": run.usage.cost,
        "age_seconds": max(0.0, (now - run.created_at).total_seconds()),
        "created_at": run.created_at.isoformat(),
        "requested_by": run.requested_by,
        "parent_id": run.parent_id,
        "fork_step": run.fork_step,
        "dry_run": run.dry_run,
    }


def budget_view(run: Run) -> list[View]:
    """Each limit the run has, with what it used: the console draws one bar per line."""
    pairs = (
        ("steps", run.usage.steps, run.budget.max_steps),
        ("input tokens", run.usage.input_tokens, run.budget.max_input_tokens),
        ("output tokens", run.usage.output_tokens, run.budget.max_output_tokens),
        ("cost", run.usage.cost, run.budget.max_cost),
    )
    return [
        {
            "name": name,
            "used": used,
            "limit": limit,
            "fraction": min(1.0, used / limit) if limit else None,
        }
        for name, used, limit in pairs
    ]


def timeline(
    history: Sequence[Checkpoint],
    effects: Sequence[Effect],
    approvals: Iterable[Approval],
    pages: Iterable[Page],
    displays: Mapping[str, Display] | None = None,
    events: Iterable[AuditEvent] = (),
) -> list[View]:
    """One row per step on the run's record, oldest first; undone steps stay, marked.
    `displays`: how each tool's arguments read (a call's `reads`, e.g. "Refund $25.00 on
    order 4471"). `events`: the run's audit, which marks a call handed another run's effect
    (`relied_on`) and one whose effect was undone by that run since (`undone`)."""
    sharing = _sharing(events)
    by_call = {effect.call_id: effect for effect in effects}
    compensations = {e.compensates: e for e in effects if e.compensates is not None}
    approvals_by_call = _grouped(approvals)
    pages_by_call = _grouped(pages)
    rows: dict[tuple[int, bool], View] = {}
    for checkpoint in history:
        key = (checkpoint.step, checkpoint.rolled_back)
        row = rows.setdefault(key, _row(checkpoint))
        row.update(status=checkpoint.status.value, stop_reason=checkpoint.stop_reason)
        row["cost"] = checkpoint.usage.cost
        if checkpoint.snapshot and checkpoint.seq > 0:
            row["restored"] = True
            continue
        for message in checkpoint.messages:
            _add_message(row, message)
    results = {call: text for row in rows.values() for call, text in row.pop("results").items()}
    for row in rows.values():
        for call in row["calls"]:
            call_id = call["id"]
            call["result"] = results.get(call_id)
            call["reads"] = reading.title((displays or {}).get(call["tool"]), call["args"])
            effect = by_call.get(call_id)
            call["effect"] = effect_view(effect, compensations.get(call_id)) if effect else None
            asked = approvals_by_call.get(call_id, [])
            call["approvals"] = [approval_view(a) for a in asked]
            call["pages"] = [page_view(p) for p in pages_by_call.get(call_id, [])]
            trail = call_trail(asked, [effect] if effect else [])
            call["binding"] = trail[-1].line() if trail else None  # proposed -> approved -> ran
            call.update(sharing.get(call_id, {"relied_on": None, "undone": None}))
    shown = list(rows.values())
    for row in shown:
        row["label"] = step_outcome(row, latest=row is shown[-1])
        row["outcome"] = words.run_outcome(row["status"], row.get("stop_reason"))
    return shown


def _sharing(events: Iterable[AuditEvent]) -> dict[str, View]:
    """By call id: the other run's effect the call was handed, and whether it was undone."""
    found: dict[str, View] = {}
    for event in events:
        call = str(event.detail.get("call_id") or "")
        if event.action == "effect_reused":
            mark = found.setdefault(call, {"relied_on": None, "undone": None})
            mark["relied_on"] = {
                "run_id": event.detail.get("from_run"),
                "call_id": event.detail.get("from_call"),
            }
        elif event.action == "relied_on_effect_undone":
            mark = found.setdefault(call, {"relied_on": None, "undone": None})
            mark["undone"] = {
                "by_run": event.detail.get("by_run"),
                "by": event.actor,
                "at": event.at.isoformat(),
            }
    return found


def step_outcome(row: View, *, latest: bool) -> str:
    """What a step came to, in the vocabulary's words: a finished step says what its calls
    did ("issue_refund: approved, completed"), or that the model replied; the latest step,
    or one that stopped the run, says the run's state there."""
    status, stop = row["status"], row.get("stop_reason")
    if status != "running" and (latest or not row["calls"]):
        return words.run_state(status, stop)
    if row["calls"]:
        return "; ".join(words.call_outcome(c["tool"], *_call_states(c)) for c in row["calls"])
    if row["replies"]:
        return words.REPLIED
    return words.run_state(status, stop) if latest else words.STARTED


def _call_states(call: View) -> tuple[str | None, str | None]:
    approvals = call["approvals"]
    effect = call["effect"]
    return (approvals[-1]["label"] if approvals else None, effect["label"] if effect else None)


def effect_view(effect: Effect, compensation: Effect | None) -> View:
    """An effect's classification and state: completed, in doubt, compensated, ..."""
    state = effect.status.value
    if effect.compensated_by is not None or (
        compensation is not None and compensation.status == EffectStatus.COMPLETED
    ):
        state = "compensated"
    return {
        "tool": effect.tool,
        "classification": effect.reversibility.value,
        "state": state,
        "label": words.COMPENSATED if state == "compensated" else words.effect_state(effect),
        "compensator": effect.compensator,
        "compensated_by": effect.compensated_by or (compensation.call_id if compensation else None),
        "idempotency_key": effect.idempotency_key,
        "args_digest": effect.args_digest,
        "args": effect.shown_args,
        "result": effect.result,
        "error": effect.error,
    }


def approval_view(approval: Approval) -> View:
    return {
        "id": approval.id,
        "state": approval.state.value,
        "label": words.approval_state(approval),
        "decided_by": approval.decided_by,
        "decided_at": approval.decided_at.isoformat() if approval.decided_at else None,
        "reason": approval.reason,
        "policy": approval.policy,
        "args": approval.shown_args,
        "approved_args": approval.shown_approved_args,
        "edits": _edits(approval),
        "args_digest": approval.args_digest,
        "approved_digest": approval.approved_digest,
        "separate": approval.key_suffix is not None,
        "conflict_run": approval.conflict.run_id if approval.conflict else None,
        "limits": reading.limit_lines(approval),
        "context": reading.context_lines(approval),
        "cool_off": reading.cool_off_lines(approval),
        "envelope_id": approval.rule.envelope_id if approval.rule else None,
        "deciders": words.who_may_decide(Runtime.authority(approval)),
    }


def _edits(approval: Approval) -> str | None:
    """`proposed amount_cents 2500, approved amount_cents 2000`, or None unedited."""
    if approval.shown_approved_args is None:
        return None
    changes = differences(approval.shown_args, approval.shown_approved_args)
    if not changes:
        return None
    return f"proposed {said(changes, 1)}, approved {said(changes, 2)}"


def page_view(page: Page) -> View:
    return {
        "id": page.id,
        "reason": page.reason,
        "detail": page.detail,
        "label": words.page_state(page),
        "acknowledged_by": page.acknowledged_by,
        "created_at": page.created_at.isoformat(),
    }


def event_view(event: AuditEvent) -> View:
    return {
        "action": event.action,
        "actor": event.actor,
        "at": event.at.isoformat(),
        "approval_id": event.approval_id,
        "detail": event.detail,
    }


def rollback_preview(effects: Sequence[Effect], step: int, on_timeline: set[str]) -> View:
    """What `Runtime.rollback(run, step)` would do, newest first, as its undo does it: a
    completed effect with a compensator is compensated; one without, or in doubt, is paged."""
    compensate: list[View] = []
    page: list[View] = []
    for effect in reversed(effects):
        if effect.step <= step or effect.call_id not in on_timeline:
            continue
        if effect.compensates is not None or effect.compensated_by is not None:
            continue
        if effect.reversibility == Reversibility.READ or effect.status == EffectStatus.FAILED:
            continue
        line = {"call_id": effect.call_id, "tool": effect.tool, "step": effect.step}
        if effect.status == EffectStatus.COMPLETED and effect.compensator:
            compensate.append(line | {"compensator": effect.compensator})
        else:
            page.append(line | {"why": _page_reason(effect)})
    return {"to_step": step, "compensate": compensate, "page": page}


def _page_reason(effect: Effect) -> str:
    if effect.status != EffectStatus.COMPLETED:
        return f"{effect.status.value}: it may or may not have happened"
    return "no compensating tool: a person undoes it"


def _row(checkpoint: Checkpoint) -> View:
    return {
        "step": checkpoint.step,
        "rolled_back": checkpoint.rolled_back,
        "at": checkpoint.created_at.isoformat(),
        "replies": [],
        "calls": [],
        "results": {},
        "notes": [],
    }


def _add_message(row: View, message: Message) -> None:
    if message.role == "assistant":
        if message.content:
            row["replies"].append(message.content)
        for call in message.tool_calls:
            row["calls"].append({"id": call.id, "tool": call.name, "args": call.arguments})
    elif message.role == "tool" and message.tool_call_id:
        row["results"][message.tool_call_id] = message.content
    elif message.role == "user":
        row["notes"].append(f"task: {message.content}")


def _grouped(items: Iterable[Approval] | Iterable[Page]) -> dict[str, list[Any]]:
    grouped: dict[str, list[Any]] = {}
    for item in items:
        if item.call_id:
            grouped.setdefault(item.call_id, []).append(item)
    return grouped
