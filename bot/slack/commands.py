"""`/runs` sub-commands: read the runtime, answer with Block Kit.

`status <id>`, `list [status]`, `pending` (what waits for the caller), `history <id>`,
`cancel <id> [compensate]` (approvers of the run's policies only; `compensate` undoes a
reversible tool in flight once it ends), `envelope …`/`envelopes` (`bot.slack.envelopes`)
and `help`. Every answer is ephemeral.
"""

from __future__ import annotations

from typing import Any

from bot import readers
from bot import words
from bot.readers import not_a_reader
from bot.reading import displays
from bot.slack import blocks as kit
from bot.slack import envelopes
from bot.slack import escape
from bot.slack import replies
from bot.slack import similar
from runtime import Actor
from runtime import Permission
from runtime import Runtime
from runtime import errors
from runtime.records import Approval
from runtime.records import ApprovalState
from runtime.records import Run
from runtime.records import RunStatus

NOTE_TEXT = 450

LIST_LIMIT = 20
LIST_SCAN = 200
"""Runs read for `/runs list` before those the caller may not read are left out."""


async def answer(
    rt: Runtime,
    text: str,
    *,
    user: str,
    channel: str | None = None,
) -> dict[str, Any]:
    """The reply to `/runs <text>` from `user` in `channel`; runs they may not read
    (`bot.readers`) are neither listed nor shown."""
    words = text.split()
    verb, rest = (words[0].lower(), words[1:]) if words else ("help", [])
    try:
        if verb == "help":
            return replies.runs_help()
        if verb == "list":
            readable = await _readable(rt, rest[0] if rest else None, user, channel)
            return await _list(rt, readable, rest[0] if rest else None)
        if verb == "pending":
            mine = sorted(await waiting_for(rt, user), key=lambda a: a.created_at)  # longest first
            more = max(len(mine) - LIST_LIMIT, 0)
            return replies.pending_list(
                mine[:LIST_LIMIT], more=more, displays=displays(rt), now=rt.clock()
            )
        if verb in ("status", "history") and len(rest) == 1:
            if not await readers.may_read(rt, await rt.get(rest[0]), user, channel=channel):
                return replies.refusal(not_a_reader(rest[0]))
            return await _about_run(rt, verb, rest[0], user=user)
        if verb == "cancel" and len(rest) == 1:
            return await _about_run(rt, verb, rest[0], user=user)
        if verb == "cancel" and len(rest) == 2 and rest[1].lower() == "compensate":
            return await _cancel(rt, await rt.get(rest[0]), user=user, compensate=True)
        if verb in ("envelope", "envelopes"):
            return await envelopes.answer(rt, text, user=user, channel=channel)
        learned = await similar.answer(rt, verb, rest, user=user)
        if learned is not None:
            return learned
    except errors.RunNotFound:
        return replies.not_found("run", rest[0])
    except errors.InvalidRequest as exc:
        return replies.refusal(str(exc))
    return replies.unknown_command(text)


async def _readable(rt: Runtime, status: str | None, user: str, channel: str | None) -> list[Run]:
    runs = await rt.list(status, limit=LIST_SCAN)
    return await readers.readable(rt, runs, user, channel=channel)


async def _list(rt: Runtime, runs: list[Run], status: str | None) -> dict[str, Any]:
    shown = runs[:LIST_LIMIT]
    more = len(runs) - len(shown)
    parked = [r.id for r in shown if r.status == RunStatus.WAITING_APPROVAL]
    decided = {i for i in parked if not await rt.approvals(i, state=ApprovalState.PENDING)}
    return replies.run_list(shown, status=status, more=more, decided=decided)


async def _about_run(rt: Runtime, verb: str, run_id: str, *, user: str) -> dict[str, Any]:
    run = await rt.get(run_id)
    if verb == "history":
        return replies.run_history(run, await rt.history(run_id))
    if verb == "cancel":
        return await _cancel(rt, run, user=user)
    approvals = await rt.approvals(run_id, state=ApprovalState.PENDING)
    pages = await rt.queries.pages(run_id=run_id)
    decided = run.status == RunStatus.WAITING_APPROVAL and not approvals
    cooling = words.cool_off_end(await rt.approvals(run_id)) if decided else None
    calls = await rt.call_trail(run_id)
    return replies.run_status(
        run,
        approvals,
        pages,
        calls=calls,
        decided=decided,
        displays=displays(rt),
        cooling=cooling,
    )


async def _cancel(rt: Runtime, run: Run, *, user: str, compensate: bool = False) -> dict[str, Any]:
    if run.status in (RunStatus.DONE, RunStatus.CANCELLED):
        return replies.refusal(f"Run {run.id} is {run.status.value} already; nothing changed.")
    if not await may_cancel(rt, run, user):
        return replies.refusal(
            f"Only an approver of run {run.id}'s actions may cancel it; nothing changed."
        )
    cancelled = await rt.cancel(
        run.id, by=user, reason="cancelled from Slack", wait=False, compensate=compensate
    )
    approvals = await rt.approvals(run.id, state=ApprovalState.PENDING)
    reply = replies.run_status(cancelled, approvals, [])
    note = rt.still_running(run.id, await rt.in_flight(run.id), compensate=compensate)
    return reply if note is None else _with_note(reply, note)


async def may_cancel(rt: Runtime, run: Run, user: str) -> bool:
    """The permission table's `cancel` row: whoever may approve the run's actions."""
    return await rt.may(Actor.of_person(user), Permission.CANCEL, run)


async def waiting_for(rt: Runtime, user: str) -> list[Approval]:
    """Pending approvals this user may decide, newest first (not their own requests)."""
    mine = [
        a
        for a in await rt.approvals(state=ApprovalState.PENDING)
        if await may_decide_approval(rt, a, user)
    ]
    return sorted(mine, key=lambda a: a.created_at, reverse=True)


async def may_decide_approval(rt: Runtime, approval: Approval, user: str) -> bool:
    """The permission table's `decide` row: an approver under the approval's recorded
    authority (a requester only where the policy allows self-approval)."""
    return await rt.may(Actor.of_person(user), Permission.DECIDE, approval)


def _with_note(reply: dict[str, Any], note: str) -> dict[str, Any]:
    """A reply with a plain-text note (e.g. a cancel's "still running") after its blocks."""
    blocks = [*reply.get("blocks", []), kit.section(escape.mrkdwn(note, limit=NOTE_TEXT))]
    return reply | {"blocks": blocks, "text": f"{reply.get('text', '')} {note}".strip()}
