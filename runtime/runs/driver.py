"""Driving one run while holding its lease: the checkpointed agent loop (docs/architecture.md rules
1, 2, 5).

Each step: ask the model; write its reply together with the `started` effect of the first
call; run the tool; queue its result. A result that must not be lost (an effect that may not
run twice) is written before the model is asked again; a read's result rides in the write of
the next reply. Everything is written through the run's `Journal`. One job, one run's step
loop; long because each thing a step can meet (a refused call, an approval, a timeout, an
effect in doubt) is its own short method.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from functools import partial
from typing import Any, TypeVar

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
)

from runtime.agent import Agent
from runtime.approvals import paging
from runtime.approvals.binding import Unbound, bind, conflict_of, differences, said
from runtime.approvals.desk import ApprovalDesk
from runtime.deps import Deps
from runtime.model import ModelError, RateLimited, Reply, estimate, unparsed_arguments
from runtime.runs import results
from runtime.runs.budget import StopReason, exhausted, watches_usage, would_exceed
from runtime.runs.journal import Journal, Stopped
from runtime.runs.keys import idempotency_key
from runtime.runs.telemetry import set_log_step
from runtime.tools import Tool, ToolArgumentError, ToolContext, ToolTimeout
from store import (
    Approval,
    ApprovalState,
    Effect,
    EffectOutcome,
    EffectStatus,
    Message,
    Page,
    Run,
    RunState,
    RunStatus,
    ToolCall,
    errors,
)
from store.records import pending_calls

log = logging.getLogger("signoff.driver")
T = TypeVar("T")

MAX_RATE_LIMIT_RETRIES = 5
MAX_RETRY_AFTER = 60.0


@dataclass(frozen=True, slots=True)
class Plan:
    """One tool call, checked: which tool, validated args, its key, or why it cannot run."""

    call: ToolCall
    tool: Tool | None = None
    args: dict[str, Any] | None = None
    key: str | None = None
    problem: str | None = None
    needs_approval: bool = False


class Driver:
    def __init__(
        self, deps: Deps, desk: ApprovalDesk, run: Run, agent: Agent, state: RunState
    ) -> None:
        self.deps = deps
        self.desk = desk
        self.store = deps.store
        self.run = run
        self.agent = agent
        self.journal = Journal(
            deps.store,
            run,
            state,
            owner=deps.worker_id,
            clock=deps.clock,
            lease=deps.leases.get(run.id),
        )
        self.ended = False
        self.used_ids: set[str] = set()
        self.earlier_effects: dict[str, Effect] = {}
        self.earlier_approvals: dict[str, Approval] = {}

    # the loop

    async def drive(self) -> bool:
        """Drive until the run finishes, parks or is taken away; True if this driver ended it."""
        try:
            await self._load_used_ids()
            calls = pending_calls(self.journal.messages)
            if calls and not await self._handle_calls(calls, fresh=False):
                return self.ended
            while (reply := await self._next_reply()) is not None:
                if not reply.tool_calls:
                    await self._stop(RunStatus.DONE, StopReason.ANSWERED)
                    break
                if not await self._handle_calls(reply.tool_calls, fresh=True):
                    break
        except Stopped as stop:
            self.ended = self.ended or stop.ended
            log.info("run %s changed under its driver; stopped driving it", self.run.id)
            await self._page_acted_late(stop.acted_late)
        except errors.DatabaseError:
            raise  # the store is unwell: leave the run to recovery rather than fail it
        except Exception as exc:
            log.exception("run %s failed in its driver", self.run.id)
            with contextlib.suppress(Stopped, errors.StoreError):
                await self._stop(RunStatus.FAILED, StopReason.ERROR, error=f"{exc!r}")
        return self.ended

    async def _next_reply(self) -> Reply | None:
        """Ask the model for the next step, unless the budget is spent. None when stopped."""
        journal = self.journal
        reason = exhausted(self.run.budget, journal.usage)
        if reason is not None:
            await self._stop(RunStatus.FAILED, reason)
            return None
        if (over := self._next_call_exceeds()) is not None:
            await self._stop(RunStatus.FAILED, over[0], error=over[1])
            return None
        if journal.pending:
            if journal.unsafe:
                await journal.write()
            else:
                # Only reads and idempotent effects since the last write: if the process dies
                # while the model thinks, they re-run under the same keys, harmlessly. So their
                # results ride in the transaction that records the model's reply.
                journal.seal()
        asked = time.monotonic()
        reply = await self._ask_model()
        if reply is not None:
            self.deps.telemetry.model_step(self.agent.name, time.monotonic() - asked, reply.usage)
            reply = Reply(reply.content, self._unique_ids(reply.tool_calls), reply.usage)
            message = Message(role="assistant", content=reply.content, tool_calls=reply.tool_calls)
            journal.reply(message, reply.usage)
            set_log_step(journal.step)
        return reply

    def _next_call_exceeds(self) -> tuple[StopReason, str] | None:
        """Why the next model call may not be made: it would overrun a token or cost limit."""
        budget = self.run.budget
        if not watches_usage(budget):
            return None
        usage = self.journal.usage
        call = estimate(self.agent.model, self.journal.transcript, self.agent.specs)
        reason = would_exceed(budget, usage, call)
        if reason is None:
            return None
        return reason, (
            f"the next model call (at least {call.input_tokens} prompt tokens, "
            f"${call.cost:.6f}) would exceed the budget {budget.model_dump(exclude_none=True)} "
            f"with {usage.input_tokens} input tokens, {usage.output_tokens} output tokens and "
            f"${usage.cost:.6f} used"
        )

    async def _load_used_ids(self) -> None:
        """Call ids this run already used: in its transcript, and in effects and approvals,
        including those of steps a rollback took out of the transcript."""
        self.used_ids = {c.id for m in self.journal.messages for c in m.tool_calls}
        if self.journal.seq > 0:
            effects = await self.store.list_effects(self.run.id)
            approvals = await self.store.list_approvals(run_id=self.run.id)
            self.earlier_effects = {e.call_id: e for e in effects}
            self.used_ids.update(self.earlier_effects, (a.call_id for a in approvals if a.call_id))
            # A withdrawn approval is no one's answer: a call still open is asked again.
            # An approval asked because of a conflict supersedes the one the call ran into
            # the conflict with (the list is oldest first; a later entry wins).
            ordered = sorted(approvals, key=lambda a: a.conflict is not None)
            self.earlier_approvals = {
                a.call_id: a for a in ordered if a.call_id and not a.withdrawn
            }

    def _unique_ids(self, calls: Sequence[ToolCall]) -> tuple[ToolCall, ...]:
        """Models may reuse call ids; the ledger keys effects by them, so each must be new."""
        unique = []
        for position, call in enumerate(calls, start=1):
            call_id, n = call.id, 0
            while not call_id or call_id in self.used_ids:
                n += 1
                call_id = f"{call.id or 'call'}-s{self.journal.step}-{position}" + (
                    f"-{n}" if n > 1 else ""
                )
            self.used_ids.add(call_id)
            unique.append(call if call_id == call.id else call.model_copy(update={"id": call_id}))
        return tuple(unique)

    async def _ask_model(self) -> Reply | None:
        """The model's reply; a rate limit is waited out (as long as it says, capped, with
        jitter) up to MAX_RATE_LIMIT_RETRIES times. Any other failure stops the run."""
        complete = partial(self.agent.model.complete, self.journal.transcript, self.agent.specs)
        try:
            try:
                return await complete()
            except RateLimited as limited:  # rare: only now pay for the retry machinery
                await asyncio.sleep(_wait_for(limited))
                return await _retried(complete)
        except RateLimited as exc:
            await self._stop(RunStatus.FAILED, StopReason.ERROR, error=f"model: {exc}")
        except Exception as exc:
            log.exception("model call failed in run %s", self.run.id)
            # A model error's message is the provider's own word; anything else is a bug.
            said = str(exc) if isinstance(exc, ModelError) and str(exc) else repr(exc)
            await self._stop(RunStatus.FAILED, StopReason.ERROR, error=f"model: {said}")
        return None

    # tool calls

    async def _handle_calls(self, calls: Sequence[ToolCall], *, fresh: bool) -> bool:
        """Resolve each open call in order. False if the run parked or stopped.

        Calls of a reply just received (`fresh`) have nothing written for them yet; calls
        found open in a loaded state may have effects or approvals from before.
        """
        plans = [self._plan(call) for call in calls]
        ids = [p.call.id for p in plans]
        effects = {} if fresh else _pick(self.earlier_effects, ids)
        approvals = {} if fresh else _pick(self.earlier_approvals, ids)
        prior = await self._request_approvals(plans, effects, approvals)
        for plan in plans:
            call = plan.call
            if call.id in effects:
                if not await self._resume_effect(plan, effects[call.id]):
                    return False
            elif plan.problem is not None or plan.tool is None:
                self.journal.add(results.error(call.id, call.name, plan.problem or "?"))
            elif call.id in prior:
                self.journal.add(self._prior_result(plan, prior[call.id]))
            elif plan.needs_approval or call.id in approvals:  # or asked about a conflict
                approval = await self._decision(approvals[call.id])
                if approval is None:
                    return False
                if approval.state == ApprovalState.DECLINED:
                    self.journal.add(results.declined(call.id, call.name, approval))
                elif not await self._execute_approved(plan, approval):
                    return False
            elif not await self._execute(plan, plan.args or {}):
                return False
        return True

    async def _decision(self, approval: Approval) -> Approval | None:
        """The approval once decided; None after parking the run to wait for it.

        A decision can land while the run is parking (made by a notifier, or by another
        process whose resume found this driver still holding the run), so the approval is
        read again after the park is written; if it was decided, the run goes on.
        """
        if approval.state != ApprovalState.PENDING:
            return approval
        await self._park()
        current = await self.store.get_approval(approval.id)
        return None if current.state == ApprovalState.PENDING else current

    def _plan(self, call: ToolCall) -> Plan:
        tool = self.agent.tools.get(call.name)
        if tool is None:
            known = ", ".join(self.agent.tools) or "none"
            return Plan(call, problem=f"unknown tool {call.name!r}; the tools are: {known}")
        raw = unparsed_arguments(call)
        if raw is not None:
            return Plan(
                call, tool, problem=f"the arguments of {call.name} are not a JSON object: {raw!r}"
            )
        try:
            args = tool.validate(call.arguments)
        except ToolArgumentError as exc:
            return Plan(call, tool, problem=str(exc))
        business_id = tool.business_id(args)
        key = idempotency_key(self.run.lineage_id, tool.name, args, business_id)
        # A dry run executes no mutating tool, so it has nothing to ask a human about.
        ask = tool.requires_approval and not (self.run.dry_run and tool.mutating)
        return Plan(call, tool, args, key, needs_approval=ask)

    async def _request_approvals(
        self,
        plans: list[Plan],
        effects: dict[str, Effect],
        approvals: dict[str, Approval],
    ) -> dict[str, Effect | Approval]:
        """Create approvals for every call that needs one, in one transaction, and notify."""
        wanted = [
            self._new_approval(p)
            for p in plans
            if p.needs_approval and p.call.id not in approvals and p.call.id not in effects
        ]
        if not wanted:
            return {}
        wanted = [await self.desk.with_conflict(await self.desk.with_duplicate(a)) for a in wanted]
        run_now = self.journal.run_now()
        wanted = [await self.deps.with_learned_rule(a, run_now) for a in wanted]
        committed = await self.journal.write(request=wanted)
        prior: dict[str, Effect | Approval] = {**committed.preempted, **committed.prior_decisions}
        created = [a for a in wanted if a.call_id not in prior]
        approvals.update({a.call_id: a for a in created if a.call_id})
        run = self.journal.run_now()
        for approval in created:
            if approval.state == ApprovalState.PENDING:
                await self.deps.announcer.approval_requested(approval, run)
            else:  # a rule approved or denied it at once: no one is asked
                self.desk.log_rule_decision(approval)
        return prior

    def _new_approval(self, plan: Plan) -> Approval:
        return self.desk.new_approval(
            tool=plan.call.name,
            args=plan.args or {},
            run=self.journal.run_now(),  # its usage so far, which rules may look at
            call_id=plan.call.id,
            idempotency_key=plan.key,
            sensitive=plan.tool.sensitive if plan.tool else (),
        )

    def _prior_result(self, plan: Plan, prior: Effect | Approval) -> Message:
        call = plan.call
        if isinstance(prior, Approval):
            return results.declined(call.id, call.name, prior)
        return results.result(call.id, call.name, prior.result)

    async def _execute_approved(self, plan: Plan, approval: Approval) -> bool:
        """Run the call as approved: only if it is the call shown and the arguments are those
        approved (digests equal), under its key (re-keyed if approved as separate)."""
        bound = bind(approval, plan.args or {}, plan.key or "")
        if isinstance(bound, Unbound):
            await self._unbound(plan, approval, bound)
            return False
        plan = replace(plan, key=bound.key)
        return await self._execute(
            plan, bound.args, approval_id=approval.id, asked_digest=bound.asked_digest
        )

    async def _unbound(self, plan: Plan, approval: Approval, unbound: Unbound) -> None:
        """Refuse to run a call that is not the one approved: page, naming both digests."""
        why = f"{plan.call.name} was not run: {unbound.why}"
        page = paging.new_page(
            self.deps,
            run_id=self.run.id,
            call_id=plan.call.id,
            tool=plan.call.name,
            reason="args_mismatch",
            detail=f"{why} (approval {approval.id}: expected digest {unbound.expected}, found "
            f"{unbound.found}). Nothing was done; check the approval and the run, then start "
            "a new request if the call is still wanted.",
        )
        self.journal.event(
            "args_mismatch",
            call_id=plan.call.id,
            approval_id=approval.id,
            expected=unbound.expected,
            found=unbound.found,
        )
        await self._stop(RunStatus.FAILED, StopReason.ARGS_MISMATCH, error=why, pages=[page])

    async def _execute(
        self,
        plan: Plan,
        args: dict[str, Any],
        *,
        approval_id: str | None = None,
        asked_digest: str | None = None,
    ) -> bool:
        tool, call, key = plan.tool, plan.call, plan.key
        if tool is None or key is None:
            raise ValueError(f"call {call.id} was not planned for execution")
        if self.run.dry_run and tool.mutating:
            self.journal.add(results.dry_run(call.id, tool.name, args))
            self.journal.event("dry_run_call", tool=tool.name, args=args)
            return True
        effect = Effect(
            run_id=self.run.id,
            call_id=call.id,
            lineage_id=self.run.lineage_id,
            step=self.journal.step,
            tool=tool.name,
            args=args,
            idempotency_key=key,
            reversibility=tool.effect,
            idempotent=tool.idempotent,
            compensator=tool.compensate,
            approval_id=approval_id,
            started_at=self.deps.clock(),
            sensitive=tool.sensitive,
            asked_digest=asked_digest,
        )
        committed = await self.journal.write(start=[effect])
        if call.id in committed.keys:
            effect = effect.model_copy(update={"idempotency_key": committed.keys[call.id]})
        if call.id in committed.preempted:
            self.journal.add(
                results.result(call.id, tool.name, committed.preempted[call.id].result)
            )
            return True
        if call.id in committed.blocked:
            await self._blocked(effect, committed.blocked[call.id])
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
        self.journal.event(
            "key_conflict",
            call_id=effect.call_id,
            other_run=other.run_id,
            other_call=other.call_id,
            digest=effect.digest,
            other_digest=other.digest,
        )
        if await self._ask_about_conflict(plan, other):
            return
        changes = differences(other.shown_args, effect.shown_args)
        why = (
            f"{effect.tool} was not run: its key was used by run {other.run_id} (call "
            f"{other.call_id}, {other.status.value}) with {said(changes, 1)}; this call has "
            f"{said(changes, 2)}"
        )
        page = paging.new_page(
            self.deps,
            run_id=self.run.id,
            call_id=effect.call_id,
            tool=effect.tool,
            reason="key_conflict",
            detail=f"{why}. Nothing was done and no result of run {other.run_id} was used; "
            "start a new request (it will ask to approve it as a separate effect) if it is "
            "still wanted.",
        )
        await self._stop(RunStatus.FAILED, StopReason.CONFLICT, error=why, pages=[page])

    async def _ask_about_conflict(self, plan: Plan, other: Effect) -> bool:
        """Park the run on a new approval of the call that shows the conflict. A rule never
        decides it: only a person chooses between declining and a separate effect. False if
        the lineage already answered this call (the caller stops and pages instead)."""
        approval = self._new_approval(plan)
        approved = None
        if other.approval_id is not None:
            with contextlib.suppress(errors.NotFound):
                approved = await self.store.get_approval(other.approval_id)
        approval = approval.model_copy(
            update={
                "conflict": conflict_of(other, approved),
                "state": ApprovalState.PENDING,
                "decided_by": None,
                "decided_at": None,
                "reason": None,
                "approved_digest": None,
            }
        )
        committed = await self.journal.write(
            status=RunStatus.WAITING_APPROVAL,
            stop_reason=StopReason.WAITING_APPROVAL,
            request=[approval],
        )
        if approval.call_id in {**committed.preempted, **committed.prior_decisions}:
            return False
        await self.deps.announcer.approval_requested(approval, self.journal.run_now())
        return True

    async def _blocked(self, effect: Effect, other: Effect) -> None:
        """The same effect is running or in doubt elsewhere in the lineage: do not guess."""
        why = (
            f"{effect.tool} with the same idempotency key is {other.status.value} in run "
            f"{other.run_id} (call {other.call_id}); doing it here could do it twice"
        )
        page = paging.new_page(
            self.deps,
            run_id=self.run.id,
            call_id=effect.call_id,
            tool=effect.tool,
            reason="in_doubt",
            detail=f"{why}. Settle that effect first, then resume this run.",
        )
        await self._stop(RunStatus.FAILED, StopReason.IN_DOUBT, error=why, pages=[page])

    async def _run_tool(self, tool: Tool, effect: Effect, *, attempt: int) -> bool:
        ctx = self._context(tool, effect, attempt)
        began = time.monotonic()
        try:
            value = await tool.invoke(effect.args, ctx)
        except ToolTimeout as exc:
            self._observe(tool, "failed" if not tool.mutating else "in_doubt", began)
            if not tool.mutating:
                return self._record(tool, effect, EffectStatus.FAILED, error=str(exc))
            return await self._in_doubt(tool, effect, str(exc), attempt)
        except Exception as exc:
            # The exception's text may repeat the arguments: its type names the failure.
            log.info("tool %s failed in run %s: %s", tool.name, self.run.id, type(exc).__name__)
            self._observe(tool, "failed", began)
            return self._record(
                tool, effect, EffectStatus.FAILED, error=f"{type(exc).__name__}: {exc}"
            )
        self._observe(tool, "completed", began)
        return self._record(tool, effect, EffectStatus.COMPLETED, value=value)

    def _observe(self, tool: Tool, outcome: str, began: float) -> None:
        if tool.mutating and tool.effect is not None:
            seconds = time.monotonic() - began
            self.deps.telemetry.effect_ended(tool.name, tool.effect.value, outcome, seconds)

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
            finished_at=self.deps.clock(),
        )
        if status == EffectStatus.COMPLETED:
            message = results.result(effect.call_id, effect.tool, value)
        else:
            message = results.failure(effect.call_id, effect.tool, error or "failed")
        self.journal.outcome(outcome, message, rerunnable=tool.idempotent)
        return True

    def _context(self, tool: Tool, effect: Effect, attempt: int) -> ToolContext:
        deadline = None
        if tool.timeout is not None:
            deadline = self.deps.clock() + timedelta(seconds=tool.timeout)
        return ToolContext(
            run_id=effect.run_id,
            call_id=effect.call_id,
            step=effect.step,
            idempotency_key=effect.idempotency_key,
            lineage_id=effect.lineage_id,
            deadline=deadline,
            attempt=attempt,
            facts=self.deps.facts,
        )

    async def _resume_effect(self, plan: Plan, effect: Effect) -> bool:
        """An effect this run started before it was interrupted (its tool may be gone since)."""
        if effect.status == EffectStatus.COMPLETED:
            self.journal.add(results.result(effect.call_id, effect.tool, effect.result))
            return True
        if effect.status == EffectStatus.FAILED:
            self.journal.add(results.failure(effect.call_id, effect.tool, effect.error or ""))
            return True
        why = "interrupted before its result was recorded"
        return await self._in_doubt(plan.tool, effect, why, 1)

    async def _in_doubt(self, tool: Tool | None, effect: Effect, why: str, attempt: int) -> bool:
        """Re-run an idempotent tool once with the same key; otherwise page and stop."""
        if tool is not None and tool.idempotent and attempt < 2:
            self.journal.event("retry_in_doubt", call_id=effect.call_id, why=why)
            return await self._run_tool(tool, effect, attempt=attempt + 1)
        if effect.status != EffectStatus.IN_DOUBT:
            self.journal.finished.append(
                EffectOutcome(
                    run_id=effect.run_id,
                    call_id=effect.call_id,
                    status=EffectStatus.IN_DOUBT,
                    error=why,
                    finished_at=self.deps.clock(),
                )
            )
        page = paging.new_page(
            self.deps,
            run_id=self.run.id,
            call_id=effect.call_id,
            tool=effect.tool,
            reason="in_doubt",
            detail=f"{effect.tool}({effect.args}) may or may not have happened: {why}. "
            "Check the outside system, then resolve it.",
        )
        await self._stop(RunStatus.FAILED, StopReason.IN_DOUBT, error=why, pages=[page])
        return False

    async def _page_acted_late(self, acted_late: Sequence[tuple[EffectOutcome, Effect]]) -> None:
        """Our tool acted after the run was taken over and a human resolved it as not done."""
        for outcome, resolved in acted_late:
            said = resolved.status.value + (f" ({resolved.error})" if resolved.error else "")
            page = paging.new_page(
                self.deps,
                run_id=self.run.id,
                call_id=resolved.call_id,
                tool=resolved.tool,
                reason="acted_late",
                detail=f"{resolved.tool}({resolved.args}) did complete, in worker "
                f"{self.deps.worker_id} after the run was taken over, with result "
                f"{outcome.result!r}; the ledger says {said}. Check the outside system and "
                "undo or account for it by hand.",
            )
            await paging.page(self.deps, self.journal.run_now(), page)

    # writes

    async def _park(self) -> None:
        """Wait for a human, holding nothing; re-parking an already parked run writes nothing."""
        journal = self.journal
        if journal.status == RunStatus.WAITING_APPROVAL and not journal.pending:
            return
        await journal.write(
            status=RunStatus.WAITING_APPROVAL, stop_reason=StopReason.WAITING_APPROVAL
        )

    async def _stop(
        self,
        status: RunStatus,
        reason: StopReason,
        *,
        error: str | None = None,
        pages: Sequence[Page] = (),
    ) -> None:
        committed = await self.journal.write(
            status=status, stop_reason=reason, error=error, pages=pages
        )
        self.ended = True
        await paging.announce_new(self.deps, pages, committed, self.journal.run_now())


async def _retried(complete: Callable[[], Awaitable[Reply]]) -> Reply:
    """The tries after a first rate limit, up to MAX_RATE_LIMIT_RETRIES of them."""
    async for attempt in AsyncRetrying(
        retry=retry_if_exception_type(RateLimited),
        stop=stop_after_attempt(MAX_RATE_LIMIT_RETRIES),
        wait=_retry_after,
        reraise=True,
    ):
        with attempt:
            return await complete()
    raise AssertionError("unreachable: the last try returns or raises")


def _retry_after(retry: RetryCallState) -> float:
    failure = retry.outcome.exception() if retry.outcome else None
    return _wait_for(failure if isinstance(failure, RateLimited) else None)


def _wait_for(limited: RateLimited | None) -> float:
    """As long as the provider asked (capped), plus up to a tenth more: runs limited at once
    do not all come back at once."""
    asked = limited.retry_after if limited is not None else 1.0
    wait = min(asked, MAX_RETRY_AFTER)
    return wait + random.uniform(0, wait / 10)


def _pick(found: dict[str, T], ids: Sequence[str]) -> dict[str, T]:
    return {i: found[i] for i in ids if i in found}
