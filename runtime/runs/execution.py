"""Running one call's tool under the effect ledger (docs/architecture.md rules 1, 2): the effect is
written `started` before the tool runs, under its idempotency key (a completed one is returned, not
run again; one running or in doubt elsewhere, or used with other arguments, is not run), an approved
call runs only as approved, and the outcome is queued for the next write. An effect left in doubt is
re-run only by an idempotent tool; otherwise a person is paged."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any

from runtime.approvals import CallContext
from runtime.approvals import Unbound
from runtime.approvals import bind
from runtime.approvals import context_changes
from runtime.approvals import ensure_receipt
from runtime.approvals import gather_context
from runtime.approvals import post_page
from runtime.runs import refusals
from runtime.runs import results
from runtime.runs import tool_log
from runtime.runs.budget import StopReason
from runtime.runs.gate import Gate
from runtime.runs.planning import Plan
from runtime.runs.session import Session
from runtime.tools import Tool
from runtime.tools import ToolContext
from runtime.tools import ToolTimeout
from store import Approval
from store import AuditEvent
from store import Effect
from store import EffectOutcome
from store import EffectStatus
from store import RunStatus

log = logging.getLogger("signoff.driver")


class Execution:
    def __init__(self, session: Session, gate: Gate) -> None:
        self.session = session
        self.gate = gate
        self.receipts: dict[str, dict[str, Any]] = {}
        """The signed receipts of the approvals calls run under, by call id."""

    async def execute_approved(self, plan: Plan, approval: Approval) -> bool:
        """Run the call as approved: only if it is the call shown and the arguments are those
        approved (digests equal), under its key (re-keyed if approved as separate)."""
        bound = bind(approval, plan.args or {}, plan.key or "")
        if isinstance(bound, Unbound):
            await self._unbound(plan, approval, bound)
            return False
        plan = replace(plan, key=bound.key)
        held = await self._cool_off(plan, approval)
        if held is not None:
            return held
        if not await self._still_good(replace(plan, args=bound.args), approval):
            return False
        deps = self.session.deps
        approval = await ensure_receipt(deps.store, deps.signer, approval)
        if approval.receipt is not None:
            self.receipts[plan.call.id] = approval.receipt
        return await self.execute(
            plan, bound.args, approval_id=approval.id, asked_digest=bound.asked_digest
        )

    async def _cool_off(self, plan: Plan, approval: Approval) -> bool | None:
        """A reversible call under a policy's `cool_off` or `undo_for` (issue 42.6) is claimed
        before it runs, by compare-and-set: None to run it now; False when the run parked to
        wait out the cool-off (the scheduler and recovery resume it when it ends, by the
        database's clock); True when a person cancelled it (the agent reads that it did not
        run). The claim and a cancel are one statement each, so never both."""
        policy = self.gate.approvals.policy_of(approval)
        tool, session = plan.tool, self.session
        if policy.cool_off is None and policy.undo_for is None:
            return None
        if tool is None or tool.compensate is None or session.run.dry_run:
            return None  # start-up refuses these settings on a tool nothing can undo
        event = AuditEvent(
            action="cool_off_started",
            actor=session.deps.worker_id,
            run_id=session.run.id,
            approval_id=approval.id,
            at=session.deps.clock(),
            detail={
                "call_id": plan.call.id,
                "tool": plan.call.name,
                "cool_off": _seconds(policy.cool_off),
            },
        )
        for attempt in range(2):  # read again once parked: a cancel or the end may land meanwhile
            current = await session.deps.store.advance_cool_off(
                approval.id,
                cool_off=_seconds(policy.cool_off),
                undo=_seconds(policy.undo_for),
                event=event,
            )
            if current.cool_off == "ran":
                session.journal.track(current)  # its effect's end opens the undo window
                return None
            if current.cool_off == "cancelled":
                session.journal.add(results.cool_off_cancelled(plan.call.id, tool.name, current))
                return True
            if attempt == 0:
                await session.park()
                if current.cool_off_until is not None:
                    session.deps.announcer.on_due(current.cool_off_until)
        log.info("%s in run %s waits out its cool-off", plan.call.name, session.run.id)
        return False

    async def _still_good(self, plan: Plan, approval: Approval) -> bool:
        """Whether the approval still holds right before the call runs: within its policy's
        `valid_for`, and the facts it was approved on unchanged. Otherwise the call is asked
        again (audited: `approval_lapsed`, `facts_changed`) and False."""
        session = self.session
        valid_for = self.gate.approvals.policy_of(approval).valid_for
        decided = approval.decided_at
        found = None
        lapsed = valid_for is not None and decided is not None
        if lapsed and valid_for and decided and session.deps.clock() - decided > valid_for:
            text = (
                f"approved by {approval.decided_by} at {decided:%Y-%m-%d %H:%M} UTC and "
                f"not run within {_duration(valid_for)}"
            )
            return await self._ask_again(plan, approval, "approval_lapsed", text, None)
        if plan.tool is not None and approval.context_digest is not None:
            found = await gather_context(plan.tool, plan.args or {})
            if found is None or found.digest != approval.context_digest:
                text = _changed(approval, found)
                return await self._ask_again(plan, approval, "facts_changed", text, found)
        return True

    async def _ask_again(
        self,
        plan: Plan,
        approval: Approval,
        action: str,
        text: str,
        found: CallContext | None,
    ) -> bool:
        self.session.journal.event(
            action, call_id=plan.call.id, approval_id=approval.id, tool=plan.call.name, why=text
        )
        log.info("%s in run %s not run: %s; asked again", plan.call.name, self.session.run.id, text)
        fresh = found
        if fresh is None and plan.tool is not None:
            fresh = await gather_context(plan.tool, plan.args or {})
        reasked = {"why": action, "text": text}
        await self.gate.ask_again(plan, approval, reasked, fresh or CallContext())
        return False

    async def _unbound(self, plan: Plan, approval: Approval, unbound: Unbound) -> None:
        """Refuse to run a call that is not the one approved: page, naming both digests."""
        session = self.session
        why, page = refusals.unbound(session.deps, session.run.id, plan.call, approval, unbound)
        session.journal.event(
            "args_mismatch",
            call_id=plan.call.id,
            approval_id=approval.id,
            expected=unbound.expected,
            found=unbound.found,
        )
        await session.stop(RunStatus.FAILED, StopReason.ARGS_MISMATCH, error=why, pages=[page])

    async def execute(
        self,
        plan: Plan,
        args: dict[str, Any],
        *,
        approval_id: str | None = None,
        asked_digest: str | None = None,
    ) -> bool:
        """Start the effect and run the tool; False if the run stopped or parked instead."""
        session, journal = self.session, self.session.journal
        tool, call, key, run = plan.tool, plan.call, plan.key, session.run
        if tool is None or key is None:
            raise ValueError(f"call {call.id} was not planned for execution")
        if run.dry_run and tool.mutating:
            journal.add(results.dry_run(call.id, tool.name, args))
            journal.event("dry_run_call", tool=tool.name, args=args)
            return True
        effect = Effect(
            run_id=run.id,
            call_id=call.id,
            lineage_id=run.lineage_id,
            step=journal.step,
            tool=tool.name,
            args=args,
            idempotency_key=key,
            reversibility=tool.effect,
            idempotent=tool.idempotent,
            compensator=tool.compensate,
            approval_id=approval_id,
            started_at=session.deps.clock(),
            sensitive=tool.sensitive,
            asked_digest=asked_digest,
            args_digest=plan.digest if args is plan.args else None,
        )
        committed = await journal.write(start=[effect])
        if call.id in committed.keys:
            effect = effect.model_copy(update={"idempotency_key": committed.keys[call.id]})
        if call.id in committed.preempted:
            journal.add(results.result(call.id, tool.name, committed.preempted[call.id].result))
            return True
        if call.id in committed.blocked:
            why, page = refusals.blocked(session.deps, run.id, effect, committed.blocked[call.id])
            await session.stop(RunStatus.FAILED, StopReason.IN_DOUBT, error=why, pages=[page])
            return False
        if call.id in committed.conflicts:
            await self._conflicted(plan, effect, committed.conflicts[call.id])
            return False
        return await self._run_tool(tool, effect, attempt=1)

    async def _conflicted(self, plan: Plan, effect: Effect, other: Effect) -> None:
        """The key was used by an effect with other arguments (found as the call was about to
        start: two approvals decided before either ran, or a call no one had to approve).
        Nothing is done: the run parks on a new approval that shows the conflict, for a
        person to decline or approve as a separate effect; failing that, it stops and pages."""
        session = self.session
        session.journal.event(
            "key_conflict",
            call_id=effect.call_id,
            other_run=other.run_id,
            other_call=other.call_id,
            digest=effect.digest,
            other_digest=other.digest,
        )
        if await self.gate.ask_about_conflict(plan, other):
            return
        why, page = refusals.key_conflict(session.deps, session.run.id, effect, other)
        await session.stop(RunStatus.FAILED, StopReason.CONFLICT, error=why, pages=[page])

    async def _run_tool(self, tool: Tool, effect: Effect, *, attempt: int) -> bool:
        ctx = self._context(tool, effect, attempt) if tool.takes_ctx else None
        began = time.monotonic()
        keeper = self.session.deps.keeper
        try:
            watched = keeper.running(tool) if keeper is not None else None
            try:
                value = await tool.invoke(effect.args, ctx)
            finally:
                if keeper is not None:
                    keeper.ran(watched)
        except ToolTimeout as exc:
            self._observe(tool, "failed" if not tool.mutating else "in_doubt", began)
            if not tool.mutating:
                return self._record(tool, effect, EffectStatus.FAILED, error=str(exc))
            return await self.in_doubt(tool, effect, str(exc), attempt)
        except Exception as exc:
            tool_log.tool_raised(tool, effect, exc)
            self._observe(tool, "failed", began)
            return self._record(
                tool, effect, EffectStatus.FAILED, error=f"{type(exc).__name__}: {exc}"
            )
        self._observe(tool, "completed", began)
        return self._record(tool, effect, EffectStatus.COMPLETED, value=value)

    def _observe(self, tool: Tool, outcome: str, began: float) -> None:
        if tool.mutating and tool.effect is not None:
            seconds = time.monotonic() - began
            self.session.deps.telemetry.effect_ended(tool.name, tool.effect.value, outcome, seconds)

    def _record(
        self,
        tool: Tool,
        effect: Effect,
        status: EffectStatus,
        *,
        value: Any = None,
        error: str | None = None,
    ) -> bool:
        """Queue the outcome and its tool message; both ride on the next write."""
        outcome = EffectOutcome(
            run_id=effect.run_id,
            call_id=effect.call_id,
            status=status,
            result=value,
            error=error,
            finished_at=self.session.deps.clock(),
        )
        if status == EffectStatus.COMPLETED:
            message = results.result(effect.call_id, effect.tool, value)
        else:
            message = results.failure(effect.call_id, effect.tool, error or "failed")
        self.session.journal.outcome(outcome, message, rerunnable=tool.idempotent)
        return True

    def _context(self, tool: Tool, effect: Effect, attempt: int) -> ToolContext:
        deps = self.session.deps
        deadline = None
        if tool.timeout is not None:
            deadline = deps.clock() + timedelta(seconds=tool.timeout)
        return ToolContext.of(
            effect,
            facts=deps.facts,
            deadline=deadline,
            attempt=attempt,
            approval_receipt=self.receipts.get(effect.call_id),
        )

    async def resume_effect(self, plan: Plan, effect: Effect) -> bool:
        """An effect this run started before it was interrupted (its tool may be gone since)."""
        journal = self.session.journal
        if effect.status == EffectStatus.COMPLETED:
            journal.add(results.result(effect.call_id, effect.tool, effect.result))
            return True
        if effect.status == EffectStatus.FAILED:
            journal.add(results.failure(effect.call_id, effect.tool, effect.error or ""))
            return True
        why = "interrupted before its result was recorded"
        return await self.in_doubt(plan.tool, effect, why, 1)

    async def in_doubt(self, tool: Tool | None, effect: Effect, why: str, attempt: int) -> bool:
        """Re-run an idempotent tool once with the same key; otherwise page and stop."""
        session = self.session
        if tool is not None and tool.idempotent and attempt < 2:
            session.journal.event("retry_in_doubt", call_id=effect.call_id, why=why)
            return await self._run_tool(tool, effect, attempt=attempt + 1)
        if effect.status != EffectStatus.IN_DOUBT:
            session.journal.finished.append(
                EffectOutcome(
                    run_id=effect.run_id,
                    call_id=effect.call_id,
                    status=EffectStatus.IN_DOUBT,
                    error=why,
                    finished_at=session.deps.clock(),
                )
            )
        page = refusals.in_doubt(session.deps, session.run.id, effect, why)
        await session.stop(RunStatus.FAILED, StopReason.IN_DOUBT, error=why, pages=[page])
        return False

    async def page_acted_late(self, acted_late: Sequence[tuple[EffectOutcome, Effect]]) -> None:
        """Our tool acted after the run was taken over and a human resolved it as not done."""
        session = self.session
        for outcome, resolved in acted_late:
            page = refusals.acted_late(session.deps, session.run.id, outcome, resolved)
            await post_page(session.deps, session.journal.run_now(), page)


def _changed(approval: Approval, found: CallContext | None) -> str:
    if found is None or found.facts is None:
        why = found.unavailable if found is not None else "the tool no longer reads them"
        return f"the facts it was approved on could not be read again ({why})"
    return context_changes(approval.context or {}, found.facts)


def _seconds(length: timedelta | None) -> float | None:
    return None if length is None else length.total_seconds()


def _duration(length: timedelta) -> str:
    seconds = int(length.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0 and seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
