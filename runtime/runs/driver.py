"""Driving one run while holding its lease: the checkpointed step loop (docs/architecture.md
rules 1, 2, 5).

Each step: ask the model (`model_turn`); write its reply together with the `started` effect
of the first call; run the tool (`execution`); queue its result. A result that must not be
lost (an effect that may not run twice) is written before the model is asked again; a read's
result rides in the write of the next reply. A call that needs a person parks the run on its
approval (`gate`). Everything is written through the run's `Journal`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from typing import TypeVar

from runtime.agent import Agent
from runtime.deps import Deps
from runtime.model import Reply
from runtime.ports import Approvals
from runtime.runs import model_turn
from runtime.runs import results
from runtime.runs import verdict
from runtime.runs.aside import SteppingAside
from runtime.runs.budget import StopReason
from runtime.runs.execution import Execution
from runtime.runs.gate import Gate
from runtime.runs.journal import Journal
from runtime.runs.journal import Stopped
from runtime.runs.planning import Plan
from runtime.runs.planning import plan
from runtime.runs.session import Session
from runtime.runs.telemetry import set_log_step
from store import Approval
from store import ApprovalState
from store import Effect
from store import Message
from store import Run
from store import RunState
from store import RunStatus
from store import ToolCall
from store import errors
from store.records import pending_calls

log = logging.getLogger("signoff.driver")
T = TypeVar("T")


class Driver:
    def __init__(
        self, deps: Deps, approvals: Approvals, run: Run, agent: Agent, state: RunState
    ) -> None:
        journal = Journal(
            deps.store,
            run,
            state,
            owner=deps.worker_id,
            clock=deps.clock,
            lease=deps.leases.get(run.id),
            masks=deps.result_masks,
        )
        self.session = Session(deps, run, agent, journal)
        self.gate = Gate(self.session, approvals)
        self.execution = Execution(self.session, self.gate)
        self.used_ids: set[str] = set()
        self.earlier_effects: dict[str, Effect] = {}
        self.earlier_approvals: dict[str, Approval] = {}
        self.task: asyncio.Task[object] | None = None
        """The task driving the run: each step's model call runs in it (taken once, not per
        step: in Python 3.11 `asyncio.current_task` costs a system call)."""

    async def drive(self) -> bool:
        """Drive until the run finishes, parks or is taken away; True if this driver ended it."""
        session = self.session
        self.task = asyncio.current_task()
        try:
            session.deps.aside.check()
            await self._load_used_ids()
            calls = pending_calls(session.journal.messages)
            if calls and not await self._handle_calls(calls, fresh=False):
                return session.ended
            while (reply := await self._next_reply()) is not None:
                if not reply.tool_calls:
                    await self._answered()
                    break
                if not await self._handle_calls(reply.tool_calls, fresh=True):
                    break
        except Stopped as stop:
            session.ended = session.ended or stop.ended
            log.info("run %s changed under its driver; stopped driving it", session.run.id)
            await self.execution.page_acted_late(stop.acted_late)
        except SteppingAside:
            log.info(
                "run %s goes back to the queue untouched: this worker steps aside", session.run.id
            )
        except (errors.DatabaseError, errors.UnreadableRecord):
            # The store is unwell, or wrote what this Signoff cannot read (a newer one did):
            # leave the run to recovery, or to a worker that can, rather than fail it.
            raise
        except Exception as exc:
            log.exception("run %s failed in its driver", session.run.id)
            with contextlib.suppress(Stopped, errors.StoreError):
                await session.stop(RunStatus.FAILED, StopReason.ERROR, error=f"{exc!r}")
        return session.ended

    async def _answered(self) -> None:
        """The model answered: the run is done, and says whether it did what was asked."""
        session = self.session
        journal = session.journal
        reason, error = await verdict.answered(
            session.deps.store,
            session.run.id,
            journal.transcript,
            journal.finished,
            asked=journal.asked,
        )
        await session.stop(RunStatus.DONE, reason, error=error)

    async def _next_reply(self) -> Reply | None:
        """Ask the model for the next step, unless the budget is spent. None when stopped."""
        session, journal = self.session, self.session.journal
        agent = session.agent
        transcript = journal.transcript  # the same before and after the write below
        over = model_turn.over_budget(session.run.budget, journal.usage, agent, transcript)
        if over is not None:
            await session.stop(RunStatus.FAILED, over[0], error=over[1])
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
        try:
            reply = await self._ask(transcript)
        except model_turn.ModelFailed as failed:
            await session.stop(RunStatus.FAILED, StopReason.ERROR, error=str(failed))
            return None
        session.deps.telemetry.model_step(agent.name, time.monotonic() - asked, reply.usage)
        reply = Reply(reply.content, self._unique_ids(reply.tool_calls), reply.usage)
        message = Message(role="assistant", content=reply.content, tool_calls=reply.tool_calls)
        journal.reply(message, reply.usage)
        set_log_step(journal.step)
        return reply

    async def _ask(self, transcript: Sequence[Message]) -> Reply:
        """The model's reply, unless the worker steps aside first or meanwhile (nothing of
        this step is written while it waits: it is cancelled then, `SteppingAside`)."""
        session = self.session
        aside, run_id = session.deps.aside, session.run.id
        aside.check()
        task = self.task
        if task is not None:
            aside.asking[run_id] = task
        try:
            return await model_turn.ask(session.agent, transcript, run_id)
        except asyncio.CancelledError:
            if not aside.active or task is None:
                raise
            task.uncancel()  # this worker's own doing: the drive ends as a step aside
            raise SteppingAside(aside.reason) from None
        finally:
            aside.asking.pop(run_id, None)

    async def _load_used_ids(self) -> None:
        """Call ids this run already used: in its transcript, and in effects and approvals,
        including those of steps a rollback took out of the transcript."""
        journal, store, run_id = self.session.journal, self.session.deps.store, self.session.run.id
        self.used_ids = {c.id for m in journal.messages for c in m.tool_calls}
        if journal.seq > 0:
            effects = await store.list_effects(run_id)
            approvals = await store.list_approvals(run_id=run_id)
            self.earlier_effects = {e.call_id: e for e in effects}
            self.used_ids.update(self.earlier_effects, (a.call_id for a in approvals if a.call_id))
            # A withdrawn approval is no one's answer: a call still open is asked again.
            # An approval asked because of a conflict supersedes the one the call ran into
            # the conflict with (the list is oldest first; a later entry wins).
            ordered = sorted(approvals, key=lambda a: a.conflict is not None)
            self.earlier_approvals = {
                a.call_id: a for a in ordered if a.call_id and not a.withdrawn
            }
            for approval in approvals:  # what its calls hold is settled as they end
                journal.track(approval)

    def _unique_ids(self, calls: Sequence[ToolCall]) -> tuple[ToolCall, ...]:
        """Models may reuse call ids; the ledger keys effects by them, so each must be new."""
        unique = []
        for position, call in enumerate(calls, start=1):
            call_id, n = call.id, 0
            while not call_id or call_id in self.used_ids:
                n += 1
                call_id = f"{call.id or 'call'}-s{self.session.journal.step}-{position}" + (
                    f"-{n}" if n > 1 else ""
                )
            self.used_ids.add(call_id)
            unique.append(call if call_id == call.id else call.model_copy(update={"id": call_id}))
        return tuple(unique)

    async def _handle_calls(self, calls: Sequence[ToolCall], *, fresh: bool) -> bool:
        """Resolve each open call in order. False if the run parked or stopped.

        Calls of a reply just received (`fresh`) have nothing written for them yet; calls
        found open in a loaded state may have effects or approvals from before.
        """
        session, journal, execution = self.session, self.session.journal, self.execution
        gated = self.gate.approvals.gated
        plans = [plan(call, session.agent, session.run, gated) for call in calls]
        if fresh:  # nothing is written for these calls yet
            effects: dict[str, Effect] = {}
            approvals: dict[str, Approval] = {}
        else:
            ids = [p.call.id for p in plans]
            effects = _pick(self.earlier_effects, ids)
            approvals = _pick(self.earlier_approvals, ids)
        asks = any(p.needs_approval for p in plans)  # a read step asks no one: no gate to pass
        prior = await self.gate.request(plans, effects, approvals) if asks else {}
        for planned in plans:
            call = planned.call
            if call.id in effects:
                if not await execution.resume_effect(planned, effects[call.id]):
                    return False
            elif planned.problem is not None or planned.tool is None:
                journal.add(results.error(call.id, call.name, planned.problem or "?"))
            elif call.id in prior:
                journal.add(_prior_result(planned, prior[call.id]))
            elif planned.needs_approval or call.id in approvals:  # or asked about a conflict
                approval = await self._decision(approvals[call.id])
                if approval is None:
                    return False
                if approval.state == ApprovalState.DECLINED:
                    journal.add(results.declined(call.id, call.name, approval))
                elif not await execution.execute_approved(planned, approval):
                    return False
            elif not await execution.execute(planned, planned.args or {}):
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
        await self.session.park()
        current = await self.session.deps.store.get_approval(approval.id)
        return None if current.state == ApprovalState.PENDING else current


def _prior_result(plan: Plan, prior: Effect | Approval) -> Message:
    call = plan.call
    if isinstance(prior, Approval):
        return results.declined(call.id, call.name, prior)
    return results.result(call.id, call.name, prior.result)


def _pick(found: dict[str, T], ids: Sequence[str]) -> dict[str, T]:
    return {i: found[i] for i in ids if i in found}
