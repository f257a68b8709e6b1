"""How a run that answered ended: done, or not what was asked (a call declined or expired, or
cancelled in its cool-off, or a tool that failed). The model's last word is not the judge: a
run whose refund was declined, or whose `delete_customer` raised, answers politely all the
same; so does one a call of which a person undid while it was still going (`undone`).

Each tool's latest call on the run's transcript decides (a failure the model retried with
success does not count). The tool messages only point at candidates, cheaply, with no read
for a run whose calls all went through; the records (the effect, the approval) say what
happened."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from runtime.runs import tool_log
from runtime.runs.budget import StopReason
from store import Approval
from store import ApprovalState
from store import EffectOutcome
from store import EffectStatus
from store import Message
from store import Store
from store import errors as store_errors


async def answered(
    store: Store,
    run_id: str,
    messages: Sequence[Message],
    unwritten: Sequence[EffectOutcome],
    *,
    asked: bool,
) -> tuple[StopReason, str | None]:
    """The stop reason of a run that answered, and the error when a tool failed.
    `unwritten`: outcomes of effects that ride in the run's last write (a read's); `asked`:
    whether any of its calls has an approval (a run with none costs no read of them)."""
    latest: dict[str, Message] = {}
    for message in messages:
        if message.role == "tool" and message.name and message.tool_call_id:
            latest[message.name] = message
    failed: list[str] = []
    declined: list[StopReason] = []
    cancelled = False
    for tool, message in latest.items():
        said = _parsed(message.content)
        if said is None:
            continue
        if said.get("decision") == "declined":
            reason = await _declined(store, said.get("approval_id"))
            declined += [reason] if reason else []
        elif said.get("decision") == "cancelled":
            cancelled = cancelled or await _cancelled(store, said.get("approval_id"))
        elif "error" in said and "executed" not in said:
            error = await _failed(store, run_id, message.tool_call_id or "", unwritten)
            failed += [f"{tool}: {error}"] if error else []
    if failed:
        return StopReason.TOOL_FAILED, "; ".join(failed)
    reason = _not_done(declined, cancelled)
    if reason is None and asked and await _undone(store, run_id):
        reason = StopReason.UNDONE
    return reason or StopReason.ANSWERED, None


def _not_done(declined: Sequence[StopReason], cancelled: bool) -> StopReason | None:
    """Declined before expired before cancelled in its cool-off; None if none of these."""
    if StopReason.DECLINED in declined:
        return StopReason.DECLINED
    if declined:
        return StopReason.EXPIRED
    return StopReason.COOL_OFF_CANCELLED if cancelled else None


_SAID = ('"error"', '"declined"', '"cancelled"')


def _parsed(content: str) -> dict[str, Any] | None:
    """A tool message the runtime wrote for a failure or a decline (cheap test first)."""
    if not content.startswith("{") or not any(w in content for w in _SAID):
        return None
    try:
        said = json.loads(content)
    except ValueError:
        return None
    return said if isinstance(said, dict) else None


async def _approval(store: Store, approval_id: Any) -> Approval | None:
    if not isinstance(approval_id, str):
        return None
    try:
        return await store.get_approval(approval_id)
    except store_errors.NotFound:
        return None


async def _cancelled(store: Store, approval_id: Any) -> bool:
    """Whether the approval's call was cancelled in its cool-off (it never ran)."""
    approval = await _approval(store, approval_id)
    return approval is not None and approval.cool_off == "cancelled"


async def _undone(store: Store, run_id: str) -> bool:
    """Whether a person undid a call of this run while it was still going (issue 42.6): its
    tool message reads as a result, so only the approvals tell (one read, for a run that
    asked any). One undone after the run ended is marked by the undo itself."""
    return any(a.undone_by is not None for a in await store.list_approvals(run_id=run_id))


async def _declined(store: Store, approval_id: Any) -> StopReason | None:
    """DECLINED or EXPIRED when the approval says so; a withdrawn one is asked again."""
    approval = await _approval(store, approval_id)
    if approval is None or approval.state != ApprovalState.DECLINED or approval.withdrawn:
        return None
    return StopReason.EXPIRED if approval.reason == "expired" else StopReason.DECLINED


async def _failed(
    store: Store, run_id: str, call_id: str, unwritten: Sequence[EffectOutcome]
) -> str | None:
    """The effect's error when the ledger says the call failed (its sensitive arguments'
    values masked: the run's error is shown on every surface)."""
    try:
        effect = await store.get_effect(run_id, call_id)
    except store_errors.NotFound:
        return None
    ended = next((o for o in unwritten if o.call_id == call_id), effect)
    if ended.status != EffectStatus.FAILED:
        return None
    return tool_log.masked(ended.error or "failed", tool_log.sensitive_values(effect))
