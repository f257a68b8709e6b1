"""One job, long because every command and query has its door here: the facade.

The Runtime: the public facade. It wires the runtime's modules together and holds no
logic of its own; each method hands over to the module whose job it is:

runs/ (creation, the loop in driving and driver, resumability, ending, recovery),
approvals/ (the desk and its timers, remote requests over HTTP, paging, rules) and
history/ (listing, inbox, time travel, rollback). They share a
`Deps`, never this class.
"""

from __future__ import annotations

import builtins
import functools
import os
import socket
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Sequence
from datetime import datetime
from typing import Any
from typing import TypeVar

from runtime import collector
from runtime import errors
from runtime import permissions
from runtime.agent import Agent
from runtime.announcer import Announcer
from runtime.approvals import askers
from runtime.approvals import authority
from runtime.approvals import delegation
from runtime.approvals import paging
from runtime.approvals import remote
from runtime.approvals.binding import CallTrail
from runtime.approvals.binding import call_trail
from runtime.approvals.desk import ApprovalDesk
from runtime.approvals.desk import Decision
from runtime.approvals.learned_rules import LearnedRulesConfig
from runtime.approvals.policy import SYSTEM_ACTOR
from runtime.approvals.policy import Directory
from runtime.approvals.policy import Policies
from runtime.approvals.policy import Policy
from runtime.approvals.policy import StaticDirectory
from runtime.approvals.routing import check_rules
from runtime.approvals.rule_book import RuleBook
from runtime.approvals.stats import ApprovalStats
from runtime.approvals.stats import approval_stats
from runtime.approvals.waiting import DecisionWaiters
from runtime.deliveries import Deliveries
from runtime.deps import Deps
from runtime.facts import FactStore
from runtime.history import anchors
from runtime.history import cool_off
from runtime.history import inbox
from runtime.history import listing
from runtime.history import rollback
from runtime.history import shared
from runtime.history import timetravel
from runtime.history.rollback import RollbackReport
from runtime.history.sinks import SinkLease
from runtime.notifier import FanOut
from runtime.notifier import Notifier
from runtime.notifier import NullNotifier
from runtime.permissions import OPERATOR
from runtime.permissions import Access
from runtime.permissions import Actor
from runtime.permissions import Permission
from runtime.permissions import Permissions
from runtime.permissions import Subject
from runtime.queries import Queries
from runtime.result_masks import ResultMasks
from runtime.runs import creation
from runtime.runs import driving
from runtime.runs import ending
from runtime.runs import recovery
from runtime.runs.aside import Aside
from runtime.runs.lease import RunLocks
from runtime.runs.lease_keeper import LeaseKeeper
from runtime.runs.queue import RunQueue
from runtime.runs.resumability import check_resumable
from runtime.runs.telemetry import NullTelemetry
from runtime.runs.telemetry import Telemetry
from runtime.scheduler import Scheduler
from runtime.signing import Signer
from runtime.spend.checks import check_limits
from runtime.spend.checks import counted
from runtime.spend.config import SpendConfig
from runtime.spend.desk import SpendDesk
from runtime.tools import Tool
from store import Approval
from store import ApprovalState
from store import AuditEvent
from store import Budget
from store import Checkpoint
from store import Effect
from store import Message
from store import Page
from store import Run
from store import RunState
from store import RunStatus
from store import Store
from store.records import AuditAnchor
from store.records import Away
from store.records import Passkey
from store.records import Worker
from store.records import utcnow

SubjectT = TypeVar("SubjectT", Run, Approval, Page)
WORKER_SEEN_WITHIN = 180.0
"""Seconds after which a worker that has not said it is alive is taken for gone."""


class Runtime:
    def __init__(  # noqa: PLR0913 - the facade's options, every one a keyword with a default
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
        learned_rules: LearnedRulesConfig | None = None,
        spend: SpendConfig | None = None,
        config_digest: str | None = None,
        signer: Signer | None = None,
        access: Access | None = None,
    ) -> None:
        """`config_digest`: the digest of the configuration this process runs, recorded on
        each approval it asks (and, by `signoff serve`, in the workers table). `access`: who
        reads every run and who handles pages, for the permission table."""
        collector.pace_for_driving()
        self.store = store
        self.agents = _by_name(agents)
        self.worker_id = worker_id or f"{socket.gethostname()}-{os.getpid()}"
        self.lease_ttl = lease_ttl
        self.facts = FactStore(store, protected=protected_facts, clock=clock)
        self.locks = RunLocks()
        self.scheduler = Scheduler(self)
        """The process's one scheduler: every timer runs on it and reads `clock`."""
        self._waiters = DecisionWaiters()
        policies = policies or Policies()
        directory = directory or StaticDirectory()
        spend = spend or SpendConfig()
        limits = spend.limits
        check_limits(limits, policies, self.agents.values())
        check_rules(policies, self.agents.values(), counted(limits))
        learned_rules = learned_rules or LearnedRulesConfig()
        self.rules = RuleBook(store, clock, learned_rules, directory, self._tool)
        self.spend = SpendDesk(
            store,
            clock,
            limits=limits,
            config=spend.envelopes,
            policies=policies,
            learned=learned_rules,
            directory=directory,
            tool=self._tool,
        )
        """Limits over history and the envelopes approvers hand out."""
        self._deps = Deps(
            store=store,
            clock=clock,
            worker_id=self.worker_id,
            lease_ttl=lease_ttl,
            agents=self.agents,
            locks=self.locks,
            facts=self.facts,
            telemetry=telemetry or NullTelemetry(),
            announcer=Announcer(
                FanOut([notifier or NullNotifier(), self._waiters]),
                store,
                on_due=self.scheduler.poke,
            ),
            timers=self.scheduler,
            learned=self.rules,
            result_masks=ResultMasks(policies),
            config_digest=config_digest,
            signer=signer,
        )
        self._deps.keeper = LeaseKeeper(
            store,
            self.worker_id,
            self._deps.leases,
            ttl=lease_ttl,
            clock=clock,
            telemetry=self._deps.telemetry,
        )
        self.desk = ApprovalDesk(
            self._deps,
            policies,
            directory,
            after_decision=lambda approval, resume: self.after_decision(approval, resume=resume),
            spend=self.spend,
        )
        self.desk.resume_run = self.resume_after_decision
        self.permissions = Permissions(
            access=access or Access(),
            directory=directory,
            default=lambda: self.policies.default,
            policy_of=self.policy_of,
            approvals_of=lambda run_id: listing.list_approvals(self._deps, run_id, None),
            find_run=self._deps.find_run,
            clock=clock,
            away=lambda: store.list_away(now=clock()),
        )
        """Who may do what, at every door (`runtime.permissions`)."""
        self.queries = Queries(store, signer)
        """What surfaces read: runs, approvals, pages, audit, metrics counts, health."""
        self.deliveries = Deliveries(store, aside=self._deps.aside)
        """The bookkeeping of delivering notifications (outbox, message refs, callbacks)."""
        self.queue: RunQueue | None = None
        """The run queue this process drives runs through, once `serve_queue` made it."""

    async def may(self, actor: Actor, permission: Permission, subject: Subject) -> bool:
        """Whether `actor` may do this to this run, approval or page: the one permission
        table every door asks (`runtime.permissions`)."""
        return await self.permissions.may(actor, permission, subject)

    async def check(self, actor: Actor, permission: Permission, subject: Subject) -> None:
        """Refuse (`NotPermitted`, changing nothing) what the table does not allow."""
        if not await self.may(actor, permission, subject):
            raise errors.NotPermitted(
                permissions.refusal(actor, permission, subject),
                actor=actor,
                permission=permission,
            )

    async def permitted(
        self, actor: Actor, permission: Permission, subjects: Iterable[SubjectT]
    ) -> builtins.list[SubjectT]:
        """Those of `subjects` the actor may (the runs a person may read, say)."""
        return [s for s in subjects if await self.may(actor, permission, s)]

    async def allowed(
        self, actor: Actor, subject: Subject, asked: Iterable[Permission]
    ) -> builtins.list[str]:
        """Which of `asked` the actor may on this subject (the buttons a surface offers)."""
        return [p.value for p in asked if await self.may(actor, p, subject)]

    async def settled_on(self, run_id: str, call_id: str) -> Page | Run:
        """What settling an effect is judged on: its latest page (on-call's row of the
        table), else its run."""
        run = await self.get(run_id)
        pages = await self.queries.pages(open_only=False, run_id=run_id)
        return next((p for p in reversed(pages) if p.call_id == call_id), run)

    @property
    def access(self) -> Access:
        return self.permissions.access

    @property
    def clock(self) -> Callable[[], datetime]:
        return self._deps.clock

    @property
    def aside(self) -> Aside:
        """Whether this worker stepped aside for a newer schema: it then claims nothing, its
        drivers hand their runs back, and surfaces refuse new writes (`runtime.runs.aside`)."""
        return self._deps.aside

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
        return await creation.create(
            self._deps, agent, task, run_id=run_id, budget=budget, requested_by=requested_by
        )

    async def drive(self, run_id: str) -> Run:
        """Drive a run until it finishes or parks; a no-op if it is done or driven elsewhere.

        Called from inside this run's own driver (a notifier deciding at once), it returns
        at once: that driver reads the approval again after parking.
        """
        return await driving.drive(self._deps, self.desk, run_id)

    async def resume(
        self, run_id: str, *, budget: Budget | None = None, override_model_by: str | None = None
    ) -> Run:
        """Resume a stopped run; `budget` raises its limits (usage carries over, never resets).

        Refused, changing nothing, while a rollback of it is unfinished or one of its effects
        that may not run twice is in doubt, or when this runtime's agent is on another model
        than the run started on (`ModelChanged`), unless `override_model_by` names the person
        who chose to go on with this one (recorded on the run and in the audit)."""
        await check_resumable(self._deps, await self.get(run_id))
        return await driving.drive_now(
            self._deps,
            self.desk,
            run_id,
            reopen=True,
            budget=budget,
            override_model_by=override_model_by,
        )

    async def get(self, run_id: str) -> Run:
        return await self._deps.run(run_id)

    async def list(
        self, status: RunStatus | str | None = None, *, limit: int = 100
    ) -> builtins.list[Run]:
        return await listing.list_runs(self._deps, status, limit=limit)

    async def page_runs(
        self,
        *,
        status: str | None = None,
        agent: str | None = None,
        requested_by: str | None = None,
        cursor: str | None = None,
        limit: int = 100,
    ) -> inbox.Listed[Run]:
        """Runs newest first, a page at a time (`cursor` from the previous page)."""
        return await inbox.page(
            functools.partial(
                self.store.page_runs,
                status=listing.run_status(status),
                agent=agent,
                requested_by=requested_by,
            ),
            cursor,
            limit,
        )

    async def answer(self, run: Run) -> str | None:
        """The final answer of a finished run (None while it runs or if it gave none)."""
        return await inbox.final_answer(self._deps, run)

    async def cancel(
        self,
        run_id: str,
        *,
        by: str = SYSTEM_ACTOR,
        reason: str = "",
        wait: bool = True,
        compensate: bool = False,
        compensate_shared: bool = False,
    ) -> Run:
        """Stop a run for good; its pending approvals are withdrawn. `wait=False`: answer at
        once even while this process's driver of the run has a tool running (`in_flight`).
        `compensate`: a reversible effect in flight is undone once it ends; one other runs
        rely on only with `compensate_shared` too (else `SharedEffect`, changing nothing)."""
        return await ending.cancel(
            self._deps,
            self.desk,
            run_id,
            by=by,
            reason=reason,
            wait=wait,
            compensate=compensate,
            compensate_shared=compensate_shared,
        )

    async def in_flight(self, run_id: str) -> builtins.list[Effect]:
        """The run's effects started and not ended (a tool running now)."""
        await self._deps.run(run_id)
        return await ending.in_flight(self._deps, run_id)

    still_running = staticmethod(ending.still_running)
    """What a cancel answers, on every surface, while these effects are in flight."""

    async def relying_on(self, effects: Iterable[Effect]) -> dict[str, builtins.list[str]]:
        """By call id, the other runs relying on these effects now (handed what they did):
        what compensating them would undo for those runs too."""
        found = await shared.shared(self._deps, effects)
        return {call: [d.run_id for d in relying] for call, relying in found.items()}

    def serve_queue(
        self, *, capacity: int, poll: float, on_claimed: Callable[[int], None] | None = None
    ) -> RunQueue:
        """Drive runs through the run queue from now on (`signoff serve`): at most `capacity`
        at once, claimed from the database when woken and every `poll` seconds. Created
        runs, decisions and lapsed leases then reach whichever worker has room."""
        if self.queue is None:
            self.queue = RunQueue(
                self._deps, self.drive, capacity=capacity, poll=poll, on_claimed=on_claimed
            )
        return self.queue

    async def dispatch(self, run_id: str, *, new: bool = False) -> None:
        """Have the run driven: by whichever worker's queue has room, when this process
        runs one (a `new` run waits in the database's queue; one left mid-flight is put back
        in it), else here, until it finishes or parks."""
        if self.queue is None:
            await self.drive(run_id)
            return
        self.queue.wake(requeue=not new)

    async def recover(self) -> builtins.list[str]:
        """On start-up: drive every run that was mid-flight when its worker stopped."""
        return await recovery.recover(self._deps, drive=self.drive, finish_undo=self._finish_undo)

    async def follow_lapses(self, *, poll: float = 30.0) -> None:
        """Forever: recover each time another worker's lease lapses (and at least every
        `poll` seconds), so a run is taken over when its lease ends, not a poll later."""
        await recovery.follow_lapses(self._deps, self._recover_lapsed, poll=poll)

    async def _recover_lapsed(self) -> object:
        if self.queue is None:
            return await self.recover()
        self.queue.wake(requeue=True)
        return None

    async def recover_into_queue(self) -> builtins.list[str]:
        """On start-up, with the run queue: finish interrupted rollbacks, give back this
        worker id's old leases, and start claiming ready runs."""
        if self.queue is None:
            raise RuntimeError("serve_queue() first")
        queue = self.queue
        undos = await recovery.recover_into_queue(
            self._deps, finish_undo=self._finish_undo, requeue=lambda: queue.wake(requeue=True)
        )
        queue.start()
        return undos

    # approvals

    async def approvals(
        self, run_id: str | None = None, *, state: ApprovalState | str | None = None
    ) -> builtins.list[Approval]:
        return await listing.list_approvals(self._deps, run_id, state)

    async def page_approvals(
        self,
        *,
        state: str | None = None,
        run_id: str | None = None,
        tool: str | None = None,
        requested_by: str | None = None,
        cursor: str | None = None,
        limit: int = 100,
    ) -> inbox.Listed[Approval]:
        """Approvals oldest first, a page at a time: what waits, for an inbox or a client."""
        return await inbox.page(
            functools.partial(
                self.store.page_approvals,
                state=listing.approval_state(state),
                run_id=run_id,
                tool=tool,
                requested_by=requested_by,
            ),
            cursor,
            limit,
        )

    async def wait_decided(self, approval_id: str, seconds: float) -> None:
        """Until the approval is decided in this process or `seconds` pass (a decision made
        elsewhere is not seen: re-read the approval)."""
        await self._waiters.wait(approval_id, seconds)

    async def keep_waiting(self, approval_id: str, seconds: float) -> None:
        """Someone waits for this approval's answer `seconds` more: its heartbeat. Once it
        lapses with the approval pending, the approval says nobody is waiting now."""
        await askers.keep_waiting(self._deps, approval_id, seconds)

    async def withdraw_approval(
        self, approval_id: str, *, by: str, reason: str
    ) -> tuple[Approval, bool]:
        """The asker `by` stopped waiting (`reason`, in words): the approval is withdrawn,
        and a decision after it changes nothing. Only whoever asked may (`NotTheAsker`).
        (the approval, False) if it was withdrawn already."""
        return await askers.withdraw(self.desk, approval_id, by=by, reason=reason)

    async def votes(self, approval_id: str) -> builtins.list[str]:
        """Who voted for an approval so far, in order (a quorum fills up vote by vote)."""
        return await self._deps.store.list_votes(approval_id)

    async def decide(
        self,
        approval_id: str,
        decision: Decision,
        *,
        by: str,
        reason: str | None = None,
        args: dict[str, Any] | None = None,
        resume: bool = True,
        separate: bool = False,
        stepped_up: bool = False,
        link_nonce: str | None = None,
    ) -> Approval:
        """Record a decision by compare-and-set, then resume the run it unblocks.

        With `resume=False` it returns as soon as the decision is durable; the caller runs
        `after_decision` (tell the notifier, resume the run) once it has answered, as Slack's
        3-second ack needs. `separate=True` approves a call whose key an earlier effect used
        with other arguments as an effect of its own (re-keyed); a plain approval of such a
        call is refused (`KeyConflict`), since it would not do what the approver sees.
        `stepped_up`: the approver confirmed with a passkey (only the approvals page can say
        so); a policy's `step_up` refuses an approval without it (`StepUpRequired`).
        `link_nonce`: the e-mailed link the decision comes through, recorded as used with
        the decision, in one transaction (`LinkUsed` if it was used already).
        """
        return await self.desk.decide(
            approval_id,
            decision,
            by=by,
            reason=reason,
            args=args,
            resume=resume,
            separate=separate,
            stepped_up=stepped_up,
            link_nonce=link_nonce,
        )

    async def call_trail(self, run_id: str) -> builtins.list[CallTrail]:
        """Each decided call of a run: proposed, approved (after any edit), executed."""
        await self._deps.run(run_id)
        approvals = await self.store.list_approvals(run_id=run_id)
        return call_trail(approvals, await self.store.list_effects(run_id))

    async def approval_stats(self, *, since: datetime) -> ApprovalStats:
        """Waiting times, decline/edit/expiry rates and the busiest approvers since then."""
        return await approval_stats(self.store, since=since)

    async def acknowledge_page(self, page_id: str, *, by: str) -> Page:
        """A human takes an effect that needs one; audited. Acknowledging twice is refused."""
        return await paging.acknowledge(self._deps, page_id, by=by)

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
        resume_state: str | None = None,
        requester_token: str | None = None,
    ) -> tuple[Approval, bool]:
        """An approval for an agent on another stack (the HTTP API); no run is attached.
        `sensitive` names arguments to mask wherever the approval is shown; `resume_state`
        is kept with it, opaque, for the agent to resume from (the first request's wins);
        `requester_token`, the API token that asks, is the one that may withdraw it.

        (the approval, False) if `approval_id` names one already made for the same request:
        a client that retries asks its humans once.
        """
        return await remote.request_approval(
            self._deps,
            self.desk,
            tool,
            args,
            approval_id=approval_id,
            requested_by=requested_by,
            policy=policy,
            callback_url=callback_url,
            sensitive=sensitive,
            resume_state=resume_state,
            requester_token=requester_token,
        )

    async def resolve(
        self, run_id: str, call_id: str, *, happened: bool, by: str, result: Any = None
    ) -> Effect:
        """A human resolves an in-doubt effect: it happened (with this result) or it did not."""
        return await ending.resolve(
            self._deps, run_id, call_id, happened=happened, by=by, result=result
        )

    # time travel

    async def history(self, run_id: str) -> builtins.list[Checkpoint]:
        return await timetravel.history(self._deps, run_id)

    async def state_at(self, run_id: str, step: int) -> RunState:
        return await timetravel.state_at(self._deps, run_id, step)

    async def effects_after(self, run_id: str, step: int) -> builtins.list[Effect]:
        """The run's effects after `step` that really happened in the world."""
        return await timetravel.effects_after(self._deps, run_id, step)

    async def fork(
        self,
        run_id: str,
        from_step: int,
        modify: Callable[[builtins.list[Message]], Sequence[Message]] | None = None,
        *,
        dry_run: bool = False,
        requested_by: str | None = None,
    ) -> str:
        return await timetravel.fork(
            self._deps,
            run_id,
            from_step,
            modify,
            dry_run=dry_run,
            requested_by=requested_by,
            drive=self.drive,
        )

    async def rollback(
        self, run_id: str, to_step: int, *, by: str = SYSTEM_ACTOR, compensate_shared: bool = False
    ) -> RollbackReport:
        """Compensate the effects after `to_step` and restore it. An effect other runs rely
        on is compensated only with `compensate_shared` (then they are paged for and noted);
        without it the rollback is refused (`SharedEffect`, naming them), changing nothing."""
        async with self.locks.hold(run_id):
            return await rollback.rollback(
                self._deps,
                self.desk,
                run_id,
                to_step,
                by=by,
                compensate_shared=compensate_shared,
            )

    async def cancel_cool_off(self, approval_id: str, *, by: str, resume: bool = True) -> Approval:
        """`by` cancels an approved call waiting out its policy's cool-off: it never runs, and
        its run reads the cancel as the call's result (audited). `TooLate` once it ran (or
        was cancelled), changing nothing. Surfaces check `Permission.CANCEL_COOL_OFF` first.
        `resume=False`: return once the cancel is durable; the caller resumes the run
        (`resume_after_decision`), as Slack's 3-second ack needs."""

        async def later(run_id: str) -> None:
            return None

        return await cool_off.cancel(
            self._deps,
            approval_id,
            by=by,
            resume_run=self.resume_after_decision if resume else later,
        )

    async def undo(self, approval_id: str, *, by: str) -> RollbackReport:
        """`by` undoes the call an approval let run, through its tool's compensator, once and
        within its policy's `undo_for` once its effect completed: the rollback of that one
        effect (audited). `TooLate` otherwise, changing nothing. A compensation that fails is
        in the report's `failed` and the approval's `undo_error` (not undone; on-call paged;
        it may be tried again). Surfaces check `Permission.UNDO` first."""
        return await cool_off.undo(self._deps, approval_id, by=by)

    # what the surfaces (CLI, Slack, HTTP) call besides the above

    async def find_run(self, run_id: str | None) -> Run | None:
        return await self._deps.find_run(run_id)

    async def tool_for(self, approval: Approval) -> Tool | None:
        return await self._deps.tool_for(approval)

    async def after_decision(self, approval: Approval, *, resume: bool = True) -> None:
        """What follows a recorded decision: tell the notifier, resume the run it unblocks."""
        await driving.after_decision(
            self._deps, approval, resume=resume, resume_run=self.resume_after_decision
        )

    async def resume_after_decision(self, run_id: str) -> None:
        """Drive the run a decision unblocked (the queue's worker with room, when this
        process runs one); past a few seconds' wait, recovery does."""
        if self.queue is not None:
            self.queue.wake(decided=run_id)
            return
        await driving.resume_after_decision(self._deps, self.desk, run_id)

    async def announce_approval(self, approval: Approval, run: Run | None) -> None:
        await self._deps.announcer.approval_requested(approval, run)

    async def announce_decision(self, approval: Approval, run: Run | None) -> None:
        await self._deps.announcer.approval_decided(approval, run)

    async def announce_reminder(self, approval: Approval, *, escalated: bool) -> None:
        await self._deps.announcer.reminder(approval, escalated=escalated)

    async def announce_page(self, page: Page, run: Run | None) -> None:
        await self._deps.announcer.page(page, run)

    @property
    def policies(self) -> Policies:
        return self.desk.policies

    @property
    def directory(self) -> Directory:
        return self.desk.directory

    def policy_of(self, approval: Approval) -> Policy:
        """The policy an approval is decided under: the authority recorded when it was asked."""
        return self.desk.policy_of(approval)

    @staticmethod
    def authority(approval: Approval) -> dict[str, Any] | None:
        """Who may decide an approval, as every surface shows it (`runtime.approvals.authority`)."""
        return authority.view(approval)

    async def fill_authority(self) -> int:
        """Record, from the policy in force here, the authority of every pending approval
        asked before approvals carried it (each once, audited); how many were filled."""
        return await authority.fill(
            self.store, self.policies, self._deps.config_digest, self.clock()
        )

    # workers

    @property
    def config_digest(self) -> str | None:
        return self._deps.config_digest

    async def announce_worker(self, *, started_at: datetime) -> None:
        """Tell the other workers which configuration this one runs (at start, then every so
        often: a worker not seen for `WORKER_SEEN_WITHIN` is taken for gone)."""
        await self.store.record_worker(
            self.worker_id, config_digest=self._deps.config_digest or "", started_at=started_at
        )

    async def workers(self, *, within: float = WORKER_SEEN_WITHIN) -> builtins.list[Worker]:
        """The workers seen lately, each with the configuration digest it runs."""
        return await self.store.list_workers(within=within)

    # passkeys for step-up (the approvals page verifies them; the runtime keeps them)

    async def add_passkey(self, passkey: Passkey) -> bool:
        """Keep a passkey a person registered; False if its credential is known already."""
        return await self.store.add_passkey(passkey)

    async def passkeys(self, person: str) -> builtins.list[Passkey]:
        return await self.store.list_passkeys(person)

    async def use_passkey(self, passkey_id: str, *, person: str, sign_count: int) -> bool:
        """Move `person`'s passkey's signature counter forward; False if it is not theirs or
        the counter did not grow (a replay, a cloned key)."""
        return await self.store.use_passkey(passkey_id, person=person, sign_count=sign_count)

    async def keep_challenge(
        self, challenge: str, *, person: str, purpose: str, ttl: float
    ) -> None:
        """Keep a passkey ceremony's challenge for `ttl` seconds, in the database: whichever
        process the answer reaches can take it (`take_challenge`)."""
        await self.store.keep_challenge(challenge, person=person, purpose=purpose, ttl=ttl)

    async def take_challenge(self, challenge: str) -> tuple[str, str] | None:
        """Use a kept challenge once: (person, purpose), or None if it was used already,
        expired, or never issued."""
        return await self.store.take_challenge(challenge)

    async def check_decider(self, approval: Approval, decision: Decision, by: str) -> None:
        """Refuse `by` as `decide` would, without deciding (before a surface opens a form)."""
        await self.desk.check_decider(approval, decision, by)

    async def set_away(
        self, person: str, *, until: datetime, delegate: str, by: Actor = OPERATOR
    ) -> Away:
        """`person` is away until `until`: `delegate` decides for them meanwhile what names
        them directly (`runtime.approvals.delegation`). Audited. `by`: who says so (the
        permission table's `may_set_away`: a person for themselves only; `NotPermitted`)."""
        self._check_away(by, person)
        return await delegation.set_away(
            self.store, person, until=until, delegate=delegate, now=self.clock()
        )

    async def back(self, person: str, *, by: Actor = OPERATOR) -> bool:
        """`person` is back (whether they had said they were away). Audited. `by`: as for
        `set_away`."""
        self._check_away(by, person)
        return await delegation.back(self.store, person, now=self.clock())

    def _check_away(self, actor: Actor, person: str) -> None:
        if not permissions.may_set_away(actor, person):
            raise errors.NotPermitted(permissions.away_refusal(actor, person), actor=actor)

    async def away(self) -> builtins.list[Away]:
        """Who is away now, until when, and their delegates."""
        return await self.store.list_away(now=self.clock())

    async def anchor_audit(self, kind: str = "daily") -> AuditAnchor | None:
        """Anchor the audit chain's head now and sign it (and any anchor not signed yet, a
        prune's among them); None on an empty trail."""
        return await anchors.anchor(self.store, self._deps.signer, kind=kind, at=self.clock())

    def audit_sink(self, name: str, *, ttl: float = 30.0) -> SinkLease:
        """An audit sink's durable cursor and lease, held by this worker."""
        return SinkLease(self.store, name, self.worker_id, ttl=ttl)

    async def record_event(self, event: AuditEvent) -> None:
        """A surface's own audit event (an HTTP API call, under the token it came with)."""
        await self.store.record_event(event)

    def _tool(self, name: str) -> Tool | None:
        """The tool of that name among this runtime's agents (learned rules' checks)."""
        return next((a.tools[name] for a in self.agents.values() if name in a.tools), None)

    async def _finish_undo(self, run_id: str) -> RollbackReport | None:
        return await rollback.finish_interrupted(self._deps, self.desk, run_id)


def _by_name(agents: Iterable[Agent]) -> dict[str, Agent]:
    by_name: dict[str, Agent] = {}
    for agent in agents:
        if agent.name in by_name:
            raise errors.DefinitionError(f"two agents are named {agent.name!r}")
        by_name[agent.name] = agent
    return by_name
