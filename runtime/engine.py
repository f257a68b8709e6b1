"""The Runtime: start, drive, resume, cancel, recover and decide runs; the public facade.

The loop itself lives in `runtime.driver`, approvals in `runtime.approvals`, time travel and
rollback in their own modules. The runtime reaches storage only through `Store` and the
outside world only through its `Notifier`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import socket
import uuid
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from runtime import ending, errors, recovery, rollback, timetravel
from runtime.agent import Agent
from runtime.approvals import ApprovalDesk, Decision
from runtime.driver import Driver
from runtime.facts import FactStore
from runtime.keys import canonical_json
from runtime.lease import RunLocks, hold_lease
from runtime.notifier import Notifier, NullNotifier, safely
from runtime.policy import SYSTEM_ACTOR, Directory, Policies, StaticDirectory
from runtime.routing import check_rules
from runtime.telemetry import NullTelemetry, Telemetry, log_context
from runtime.tools import Tool
from store import (
    TERMINAL_STATUSES,
    Approval,
    ApprovalState,
    AuditEvent,
    Batch,
    Budget,
    Checkpoint,
    Effect,
    EffectStatus,
    Message,
    Page,
    Run,
    RunState,
    RunStatus,
    Store,
)
from store import errors as store_errors
from store.records import ID_PATTERN, utcnow

log = logging.getLogger("signoff.runtime")


class Runtime:
    def __init__(
        self,
        store: Store,
        agents: Iterable[Agent] = (),
        notifier: Notifier | None = None,
        *,
        policies: Policies | None = None,
        directory: Directory | None = None,
        worker_id: str | None = None,
        lease_ttl: float = 30.0,
        clock: Callable[[], datetime] = utcnow,
        protected_facts: Iterable[str] = (),
        telemetry: Telemetry | None = None,
    ) -> None:
        self.store = store
        self.agents: dict[str, Agent] = {}
        for agent in agents:
            if agent.name in self.agents:
                raise errors.DefinitionError(f"two agents are named {agent.name!r}")
            self.agents[agent.name] = agent
        self.notifier: Notifier = notifier or NullNotifier()
        self.worker_id = worker_id or f"{socket.gethostname()}-{os.getpid()}"
        self.lease_ttl = lease_ttl
        self.clock = clock
        self.facts = FactStore(store, protected=protected_facts, clock=clock)
        self.desk = ApprovalDesk(self, policies or Policies(), directory or StaticDirectory())
        check_rules(self.desk.policies, self.agents.values())
        self.on_due: Callable[[datetime], None] | None = None
        """Set by the scheduler: told when a new deadline or reminder exists."""
        self.locks = RunLocks()
        self.telemetry: Telemetry = telemetry or NullTelemetry()

    # runs

    async def start(
        self,
        agent: str,
        task: str,
        *,
        run_id: str | None = None,
        budget: Budget | None = None,
        requested_by: str | None = None,
    ) -> str:
        """Create a run and drive it until it finishes or parks. An existing id is resumed."""
        run, _ = await self.create(
            agent, task, run_id=run_id, budget=budget, requested_by=requested_by
        )
        await self.drive(run.id)
        return run.id

    async def create(
        self,
        agent: str,
        task: str,
        *,
        run_id: str | None = None,
        budget: Budget | None = None,
        requested_by: str | None = None,
    ) -> tuple[Run, bool]:
        """Create a run without driving it; (the run, False) if the id already exists."""
        chosen = self._agent(agent)
        if not task or not task.strip():
            raise errors.InvalidRequest("a run needs a task")
        if run_id is not None and not re.fullmatch(ID_PATTERN, run_id):
            raise errors.InvalidRequest(
                f"run id {run_id[:80]!r} is not 1-128 letters, digits or _ . : -"
            )
        run_id = run_id or f"run_{uuid.uuid4().hex[:20]}"
        now = self.clock()
        run = Run(
            id=run_id,
            agent=chosen.name,
            task=task,
            budget=budget or chosen.budget,
            requested_by=requested_by,
            lineage_id=run_id,
            created_at=now,
            updated_at=now,
        )
        transcript = [Message(role="user", content=task)]
        if chosen.system_prompt:
            transcript.insert(0, Message(role="system", content=chosen.system_prompt))
        snapshot = Checkpoint(
            run_id=run_id,
            seq=0,
            step=0,
            snapshot=True,
            status=RunStatus.RUNNING,
            messages=tuple(transcript),
            created_at=now,
        )
        try:
            await self.store.create_run(run, snapshot)
        except store_errors.AlreadyExists:
            existing = await self.get(run_id)
            # Requester and budget count when given: an id alone (a restart) names the run.
            asked = (
                chosen.name,
                task,
                requested_by or existing.requested_by,
                budget or existing.budget,
            )
            if (existing.agent, existing.task, existing.requested_by, existing.budget) != asked:
                raise errors.InvalidRequest(
                    f"run {run_id!r} exists already, for agent {existing.agent!r} and task "
                    f"{existing.task!r} (requested by {existing.requested_by}, budget "
                    f"{existing.budget.model_dump(exclude_none=True)}); an id names one run"
                ) from None
            return existing, False
        return await self.get(run_id), True

    async def drive(self, run_id: str) -> Run:
        """Drive a run until it finishes or parks; a no-op if it is done or driven elsewhere.

        Called from inside this run's own driver (a notifier deciding at once), it returns
        at once: that driver reads the approval again after parking.
        """
        if self.locks.held_here(run_id):
            return await self.get(run_id)
        try:
            with log_context(run_id=run_id):
                return await self._drive(run_id)
        except errors.RunBusy:
            log.info("run %s is driven by another worker", run_id)
            return await self.get(run_id)

    async def resume(self, run_id: str, *, budget: Budget | None = None) -> Run:
        """Resume a stopped run; `budget` raises its limits (usage carries over, never resets).

        Refused, changing nothing, while a rollback of it is unfinished or one of its effects
        that may not run twice is in doubt."""
        run = await self.get(run_id)
        if await rollback.unfinished(self, run_id) is not None:
            raise errors.InvalidRequest(
                f"run {run_id}: a rollback was interrupted; recovery finishes it (or run the "
                "rollback again) before the run can go on"
            )
        effects = await self.store.list_effects(run_id)
        if run.status in (RunStatus.DONE, RunStatus.CANCELLED) or ending.compensated(self, run):
            why = (
                "its effects were compensated"
                if ending.compensated(self, run)
                else run.status.value
            )
            raise errors.InvalidRequest(
                f"run {run_id} is {why}; fork it to continue from one of its steps"
            )
        for effect in effects:
            if effect.status == EffectStatus.IN_DOUBT and not effect.idempotent:
                raise errors.InvalidRequest(
                    f"run {run_id}: {effect.tool} (call {effect.call_id}) is in doubt; check "
                    f"the outside system, then settle it first: signoff runs resolve {run_id} "
                    f"{effect.call_id} --happened | --did-not-happen --by <you>"
                )
        return await self._drive(run_id, reopen=True, budget=budget)

    async def get(self, run_id: str) -> Run:
        try:
            return await self.store.get_run(run_id)
        except store_errors.NotFound:
            raise errors.RunNotFound(f"no run {run_id!r}", run_id=run_id) from None

    async def list(self, status: RunStatus | str | None = None, *, limit: int = 100) -> list[Run]:
        return await self.store.list_runs(_status(status), limit=limit)

    async def cancel(self, run_id: str, *, by: str = SYSTEM_ACTOR, reason: str = "") -> Run:
        """Stop a run for good; its pending approvals are withdrawn."""
        return await ending.cancel(self, run_id, by=by, reason=reason)

    async def recover(self) -> list[str]:
        """On start-up: drive every run that was mid-flight when its worker stopped."""
        return await recovery.recover(self)

    # approvals

    async def approvals(
        self, run_id: str | None = None, *, state: ApprovalState | str | None = None
    ) -> list[Approval]:
        if run_id is not None:
            await self.get(run_id)
        try:
            chosen = ApprovalState(state) if state else None
        except ValueError:
            raise errors.InvalidRequest(
                f"unknown approval state {state!r}; use pending, approved or declined"
            ) from None
        return await self.store.list_approvals(run_id=run_id, state=chosen)

    async def decide(
        self,
        approval_id: str,
        decision: Decision,
        *,
        by: str,
        reason: str | None = None,
        args: dict[str, Any] | None = None,
        resume: bool = True,
    ) -> Approval:
        """Record a decision by compare-and-set, then resume the run it unblocks.

        With `resume=False` it returns as soon as the decision is durable; the caller runs
        `after_decision` (tell the notifier, resume the run) once it has answered, as Slack's
        3-second ack needs.
        """
        return await self.desk.decide(
            approval_id, decision, by=by, reason=reason, args=args, resume=resume
        )

    async def acknowledge_page(self, page_id: str, *, by: str) -> Page:
        """A human takes an effect that needs one; audited. Acknowledging twice is refused."""
        now = self.clock()
        try:
            page = await self.store.acknowledge_page(page_id, by=by, at=now)
        except store_errors.NotFound:
            raise errors.PageNotFound(f"no page {page_id!r}") from None
        except store_errors.Conflict as exc:
            page = await self.store.get_page(page_id)
            raise errors.AlreadyAcknowledged(str(exc), page=page) from None
        await self.store.record_event(
            AuditEvent(
                action="page_acknowledged",
                actor=by,
                run_id=page.run_id,
                at=now,
                detail={"page_id": page.id, "tool": page.tool, "reason": page.reason},
            )
        )
        return page

    async def request_approval(
        self,
        tool: str,
        args: dict[str, Any],
        *,
        approval_id: str | None = None,
        requested_by: str | None = None,
        policy: str | None = None,
        callback_url: str | None = None,
        sensitive: Sequence[str] = (),
    ) -> tuple[Approval, bool]:
        """An approval for an agent on another stack (the HTTP API); no run is attached.
        `sensitive` names arguments to mask wherever the approval is shown.

        (the approval, False) if `approval_id` names one already made for the same request:
        a client that retries asks its humans once.
        """
        known = self.desk.policies.tools
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
        approval = self.desk.new_approval(
            tool=tool,
            args=args,
            approval_id=approval_id,
            requested_by=requested_by,
            policy=policy,
            callback_url=callback_url,
            sensitive=tuple(dict.fromkeys(sensitive)),
        )
        try:
            await self.store.create_approval(approval)
        except store_errors.AlreadyExists:
            existing = await self.desk.get(approval.id)
            if _request_of(existing) != _request_of(approval):
                raise errors.InvalidRequest(
                    f"approval {approval.id!r} exists already, for another request; an id "
                    "names one request (tool, args, policy, requester, callback)"
                ) from None
            return existing, False
        if approval.state == ApprovalState.PENDING:
            await self.announce_approval(approval, None)
        else:  # a rule approved or denied it at once; its callback, if any, is told so
            self.desk.log_rule_decision(approval)
            await self.announce_decision(approval, None)
        return approval, True

    async def resolve(
        self, run_id: str, call_id: str, *, happened: bool, by: str, result: Any = None
    ) -> Effect:
        """A human settles an in-doubt effect: it happened (with this result) or it did not."""
        return await ending.resolve(self, run_id, call_id, happened=happened, by=by, result=result)

    # time travel

    async def history(self, run_id: str) -> list[Checkpoint]:
        return await timetravel.history(self, run_id)

    async def state_at(self, run_id: str, step: int) -> RunState:
        return await timetravel.state_at(self, run_id, step)

    async def effects_after(self, run_id: str, step: int) -> list[Effect]:
        """The run's effects after `step` that really happened in the world."""
        return await timetravel.effects_after(self, run_id, step)

    async def fork(
        self,
        run_id: str,
        from_step: int,
        modify: Callable[[list[Message]], Sequence[Message]] | None = None,
        *,
        dry_run: bool = False,
        requested_by: str | None = None,
    ) -> str:
        return await timetravel.fork(
            self, run_id, from_step, modify, dry_run=dry_run, requested_by=requested_by
        )

    async def rollback(
        self, run_id: str, to_step: int, *, by: str = SYSTEM_ACTOR
    ) -> rollback.RollbackReport:
        async with self.locks.hold(run_id):
            return await rollback.rollback(self, run_id, to_step, by=by)

    # used by the driver, the desk and the other modules

    def _agent(self, name: str) -> Agent:
        try:
            return self.agents[name]
        except KeyError:
            known = ", ".join(self.agents) or "none"
            raise errors.UnknownAgent(f"no agent {name!r}; this runtime has: {known}") from None

    async def _drive(
        self, run_id: str, *, reopen: bool = False, budget: Budget | None = None
    ) -> Run:
        async with self.locks.hold(run_id):
            run = await self.get(run_id)
            agent = self._agent(run.agent)
            if run.status in TERMINAL_STATUSES and not (reopen and run.status == RunStatus.FAILED):
                return run
            async with hold_lease(
                self.store, run_id, self.worker_id, ttl=self.lease_ttl, clock=self.clock
            ):
                if budget is not None:  # only now: a refused resume changes nothing
                    await self.store.set_run_budget(run_id, budget, at=self.clock())
                    run = run.model_copy(update={"budget": budget})
                state = await self.store.load_state(run_id)
                if state.status == RunStatus.FAILED and reopen:
                    state = await self._reopen(run, state)
                if state.status in TERMINAL_STATUSES:
                    return await self.get(run_id)
                ended = await Driver(self, run, agent, state).drive()
            run = await self.get(run_id)
            if ended:
                return await ending.after_stop(self, run)
            if run.status == RunStatus.CANCELLED:
                await ending.saga(
                    self, run
                )  # cancelled under this driver, maybe by another process
            return run

    async def _reopen(self, run: Run, state: RunState) -> RunState:
        checkpoint = Checkpoint(
            run_id=run.id,
            seq=state.seq + 1,
            step=state.step,
            status=RunStatus.RUNNING,
            usage=state.usage,
            created_at=self.clock(),
        )
        event = AuditEvent(
            action="resume",
            actor=self.worker_id,
            run_id=run.id,
            at=self.clock(),
            detail={"was": state.stop_reason},
        )
        await self.store.commit(
            Batch(run_id=run.id, owner=self.worker_id, checkpoints=[checkpoint], events=[event])
        )
        return await self.store.load_state(run.id)

    async def find_run(self, run_id: str | None) -> Run | None:
        if run_id is None:
            return None
        try:
            return await self.store.get_run(run_id)
        except store_errors.NotFound:
            return None

    async def tool_for(self, approval: Approval) -> Tool | None:
        run = await self.find_run(approval.run_id)
        agent = self.agents.get(run.agent) if run else None
        return agent.tools.get(approval.tool) if agent else None

    async def after_decision(self, approval: Approval, *, resume: bool = True) -> None:
        """What follows a recorded decision: tell the notifier, resume the run it unblocks."""
        run = await self.find_run(approval.run_id)
        await self.announce_decision(approval, run)
        if run is not None and resume and approval.state != ApprovalState.PENDING:
            await self.resume_after_decision(run.id)

    async def resume_after_decision(self, run_id: str) -> None:
        """Drive the run a decision unblocked. Its driver elsewhere may be about to park: wait
        for it a few seconds; past that, or on an error, recovery picks the run up."""
        if self.locks.held_here(run_id):
            return
        for delay in (0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2):
            try:
                await self._drive(run_id)
                return
            except errors.RunBusy:
                await asyncio.sleep(delay)
            except Exception:
                log.exception("run %s could not resume after a decision", run_id)
                return
        log.info("run %s is still driven elsewhere; recovery will resume it", run_id)

    async def announce_approval(self, approval: Approval, run: Run | None) -> None:
        log.info(
            "approval %s requested: %s under policy %s%s",
            approval.id,
            approval.tool,
            approval.policy,
            f" (run {run.id})" if run else "",
            extra={
                "approval_id": approval.id,
                "run_id": approval.run_id,
                "event": "approval_requested",
            },
        )
        await safely(self.notifier.approval_requested(approval, run))
        due = [t for t in (approval.deadline, approval.next_reminder_at) if t is not None]
        if due and self.on_due is not None:
            self.on_due(min(due))

    async def announce_decision(self, approval: Approval, run: Run | None) -> None:
        await safely(self.notifier.approval_decided(approval, run))

    async def announce_reminder(self, approval: Approval, *, escalated: bool) -> None:
        run = await self.find_run(approval.run_id)
        await safely(self.notifier.reminder_due(approval, run, escalated=escalated))

    async def announce_page(self, page: Page, run: Run | None) -> None:
        log.warning(
            "page %s: %s in run %s needs a human (%s)", page.id, page.tool, page.run_id, page.reason
        )
        await safely(self.notifier.effect_needs_human(page, run))


def _status(status: RunStatus | str | None) -> RunStatus | None:
    if status is None:
        return None
    try:
        return RunStatus(status)
    except ValueError:
        choices = ", ".join(s.value for s in RunStatus)
        raise errors.InvalidRequest(f"unknown status {status!r}; use one of {choices}") from None


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
