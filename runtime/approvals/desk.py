"""The approval desk: one approval's life up to its decision, under its policy (docs/architecture.md
rules 4, 9). Making one is `ApprovalDesk.new_approval` (from what `runtime.approvals.drafting`
reads; it also finds what an approver is shown with one), a person's decision is checked and
cast by `runtime.approvals.deciding`, decisions are written by `runtime.approvals.recording`, and
the scheduler's timed work (reminders, escalation, expiry) is `runtime.approvals.timers`;
the desk holds the policies and the directory and ties these together.

Every state change is a compare-and-set in the store, so a decision, a reminder or an expiry
that is attempted twice, or by two processes at once, happens once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Coroutine
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from datetime import datetime
from typing import Any

from runtime import errors
from runtime import lookups
from runtime.approvals import authority
from runtime.approvals import deciding
from runtime.approvals import delegation
from runtime.approvals import drafting
from runtime.approvals import recording
from runtime.approvals import timers
from runtime.approvals.deciding import Decision
from runtime.approvals.naming import overdue
from runtime.approvals.policy import SYSTEM_ACTOR
from runtime.approvals.policy import Directory
from runtime.approvals.policy import Policies
from runtime.approvals.policy import Policy
from runtime.approvals.routing import Route
from runtime.approvals.routing import decided_at_once
from runtime.approvals.routing import reads_limits
from runtime.approvals.routing import route
from runtime.approvals.routing import unasked as unasked_route
from runtime.deps import Deps
from runtime.spend import SpendDesk
from store import Approval
from store import ApprovalState
from store import Delivery
from store import Run
from store import Store
from store import errors as store_errors
from store.base import Ruling
from store.spend import SpendPlan

__all__ = ["ApprovalDesk", "Decision"]

log = logging.getLogger("signoff.approvals")


@dataclass(eq=False, repr=False)
class ApprovalDesk:
    deps: Deps
    policies: Policies
    directory: Directory
    after_decision: Callable[[Approval, bool], Awaitable[None]]
    """`after_decision(approval, resume)` runs once a decision is durable: tell the
    notifier, resume the run it unblocks (unless `resume` is False)."""
    spend: SpendDesk | None = None
    """The limits and envelopes new approvals are admitted by."""
    store: Store = field(init=False)
    resume_run: Callable[[str], Coroutine[Any, Any, None]] | None = field(init=False, default=None)
    """Resumes a run whose cool-off ended (the facade's; None: recovery does)."""
    _resuming: set[asyncio.Task[None]] = field(init=False, default_factory=set)

    def __post_init__(self) -> None:
        self.store = self.deps.store

    # creating

    def new_approval(
        self,
        *,
        tool: str,
        args: dict[str, Any],
        run: Run | None = None,
        call_id: str | None = None,
        idempotency_key: str | None = None,
        approval_id: str | None = None,
        requested_by: str | None = None,
        policy: str | None = None,
        callback_url: str | None = None,
        sensitive: tuple[str, ...] = (),
        unasked: bool = False,
        limits: Mapping[str, Mapping[str, int]] | None = None,
    ) -> Approval:
        """A pending approval with its deadline and first reminder set from the policy its
        rules chose; decided already when a rule approves or denies the call at once.
        `unasked`: the tool needs no approval (its limits gate it): approved at once.
        `limits`: what the rules see of the limits the call counts against."""
        now = self.deps.clock()
        name, tool_policy = self.policies.for_tool(policy or tool)
        asker = run.requested_by if run else requested_by
        if unasked:
            routed = unasked_route(tool_policy)
        else:
            facts = drafting.facts_of(run, asker, now, limits)
            routed = route(name, tool_policy, tool, args, facts)
        if routed.match is not None and routed.match.kind == "error":
            log.warning("%s (run %s): %s", tool, run.id if run else "-", routed.match.summary)
        approval = Approval(
            id=approval_id or f"ap_{uuid.uuid4().hex[:20]}",
            tool=tool,
            args=args,
            run_id=run.id if run else None,
            call_id=call_id,
            lineage_id=run.lineage_id if run else None,
            idempotency_key=idempotency_key,
            requested_by=run.requested_by if run else requested_by,
            callback_url=callback_url,
            callback_status=Delivery.PENDING if callback_url else None,
            created_at=now,
            sensitive=sensitive,
        )
        return self.redraft(approval, name, routed)

    def redraft(self, approval: Approval, name: str, routed: Route) -> Approval:
        """The approval as the policy `routed` chose (under the name `name`) asks it: who,
        how many, where, its deadline and first reminder from when it was made; decided at
        once when the route approves or denies it."""
        rules, now = routed.policy, approval.created_at
        reminds = rules.remind_every is not None and drafting.reminds(rules)
        drafted = approval.model_copy(
            update={
                "policy": name,
                "state": ApprovalState.PENDING,
                "decided_by": None,
                "decided_at": None,
                "reason": None,
                "approved_digest": None,
                "required_approvals": rules.required_approvals,
                "deadline": now + rules.timeout if rules.timeout else None,
                "next_reminder_at": now + rules.remind_every
                if reminds and rules.remind_every
                else None,
                "channel": rules.channel,
                "rule": routed.match,
                "authority": authority.asked(name, routed, self.deps.config_digest),
            }
        )
        return decided_at_once(drafted, now)

    async def limit_values(
        self, tool: str, args: dict[str, Any], run: Run | None
    ) -> dict[str, dict[str, int]] | None:
        """What the rules of `tool`'s policy see of its limits, read now, if they read any."""
        if self.spend is None or not reads_limits(self.policies.for_tool(tool)[1]):
            return None
        return await self.spend.values(tool, args, run)

    def gated(self, tool: str) -> bool:
        """Whether calls of a tool that needs no approval pass the gate all the same (a
        limit counts them)."""
        return self.spend is not None and self.spend.limited(tool)

    async def plan_spend(self, approval: Approval, run: Run | None) -> SpendPlan | None:
        """How a new approval is admitted in its transaction (its limits and the envelopes
        that may approve it); None when nothing counts it."""
        if self.spend is None:
            return None
        reroute = None
        if reads_limits(self.policies.for_tool(approval.policy)[1]):

            def reroute(limits: Mapping[str, Mapping[str, int]]) -> Approval:
                return self._rerouted(approval, run, limits)

        return await self.spend.plan(approval, run, redraft=self.redraft, reroute=reroute)

    def _rerouted(
        self, approval: Approval, run: Run | None, limits: Mapping[str, Mapping[str, int]]
    ) -> Approval:
        """The approval routed again with the limits as its transaction read them: as it
        was if the rules decide the same, else as they decide now (a learned rule's
        approval stands only while the rules still ask a person)."""
        name, policy = self.policies.for_tool(approval.policy)
        facts = drafting.facts_of(run, approval.requested_by, approval.created_at, limits)
        routed = route(name, policy, approval.tool, approval.args, facts)
        before = approval.rule
        if before is not None and routed.match is not None:
            if before.learned_id is not None:
                if routed.match.action == "ask" and routed.match.kind != "error":
                    return approval
            elif routed.match.summary == before.summary:
                return approval
        return self.redraft(approval, name, routed)

    async def annotate(self, approval: Approval) -> Approval:
        """The approval naming a possible duplicate request and a key conflict."""
        approval = await drafting.with_duplicate(self.store, approval, self.deps.clock())
        return await drafting.with_conflict(self.store, approval)

    def policy_of(self, approval: Approval) -> Policy:
        """The policy an approval is decided under: the authority recorded when it was asked
        (`runtime.approvals.authority`), never this process's policies of today."""
        return authority.policy_of(approval, self.policies)

    async def with_authority(self, approval: Approval) -> Approval:
        """The approval with its authority recorded: one asked before approvals carried it
        gets it now, once, from the policy in force (the first process to do so wins)."""
        if approval.authority is not None or approval.state != ApprovalState.PENDING:
            return approval
        filled = await authority.fill_one(
            self.store, approval, self.policies, self.deps.config_digest, self.deps.clock()
        )
        return filled if filled is not None else await self.get(approval.id)

    # deciding

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
        """Record a human's decision; returns the approval (still pending while a quorum forms).

        `link_nonce`: the decision comes through an e-mailed link; the link is recorded as
        used in the decision's own transaction (`LinkUsed` if it was already), so a refused
        decision leaves it unused.

        `stepped_up`: the approver confirmed with a passkey just now (the approvals page
        verified it); an approval whose policy requires step-up is refused without it.

        `resume=False`: return once the decision is durable; the caller resumes the run.
        `separate`: approve a call whose key an earlier effect used with other arguments as
        an effect of its own (it is re-keyed); without it such an approval is refused."""
        deciding.check_request(decision, by, reason)
        approval = await self.with_authority(await self.get(approval_id))
        policy = self.policy_of(approval)
        await self._expire_if_due(approval, policy)
        decided_for = await self._check_decider(approval, policy, decision, by)
        if decision == "approved" and policy.step_up and not stepped_up:
            raise errors.StepUpRequired(
                f"policy {approval.policy!r} requires {by} to confirm this approval with a "
                "passkey on the approvals page",
                approval=approval,
                by=by,
            )
        approved_args = None
        amounts = None
        if args is not None:
            approved_args = await deciding.check_edit(self.deps, approval, policy, decision, args)
            amounts = await self._edited_amounts(approval, approved_args)
        key_suffix = await deciding.check_conflict(
            self.store, approval, decision, approved_args, separate
        )
        state, question = deciding.answer(decision, reason)
        ruling = Ruling(
            state,
            by=by,
            at=self.deps.clock(),
            reason=reason,
            approved_args=approved_args,
            approved_digest=recording.approved_digest(approval, state, approved_args),
            key_suffix=key_suffix,
            spend_amounts=amounts,
            question=question,
            decided_for=decided_for,
        )
        open_only = policy.on_timeout == "decline"
        try:
            voted = await deciding.cast(
                self.store, approval, ruling, open_only=open_only, link_nonce=link_nonce
            )
        except errors.ApprovalExpired:  # past the deadline by the database's clock
            await self._expire(approval)
            raise
        if voted.approval.state != ApprovalState.PENDING and resume:
            await self.after_decision(voted.approval, True)
        return voted.approval

    async def _edited_amounts(
        self, approval: Approval, args: dict[str, Any]
    ) -> dict[str, int] | None:
        """Each limit's amount for the edited arguments, if the call counts against any."""
        if self.spend is None or approval.rule is None or not approval.rule.limits:
            return None
        run = await self.deps.find_run(approval.run_id)
        return self.spend.amounts(approval, args, run)

    async def check_decider(self, approval: Approval, decision: Decision, by: str) -> None:
        """Refuse `by` as `decide` would (not pending, not an approver) without deciding:
        a surface asks before it opens a form for the decision."""
        approval = await self.with_authority(approval)
        await self._check_decider(approval, self.policy_of(approval), decision, by)

    async def _check_decider(
        self, approval: Approval, policy: Policy, decision: Decision, by: str
    ) -> str | None:
        """Refuse `by` as `decide` would; the away person they decide for as a delegate
        (`runtime.approvals.delegation`), None when they decide as themselves."""
        now = self.deps.clock()
        try:
            await deciding.check_decider(
                approval, policy, decision, by, directory=self.directory, now=now
            )
            return None
        except errors.NotAnApprover:
            escalated = approval.escalated or (
                policy.on_timeout == "escalate" and overdue(approval, now)
            )
            away = await self.store.list_away(now=now)
            person = delegation.principal(away, policy, by, escalated=escalated)
            if person is None:
                raise
        if decision == "approved" and by == approval.requested_by:
            raise errors.SelfApproval(
                f"{by} requested this action: a delegate never approves their own request, "
                f"not even for {person}",
                approval=approval,
                by=by,
            )
        await deciding.check_decider(
            approval, policy, decision, person, directory=self.directory, now=now
        )
        return person

    async def _expire_if_due(self, approval: Approval, policy: Policy) -> None:
        """A decision after the deadline of a policy that declines then comes too late: the
        approval is expired now (if the scheduler has not yet) and the decision refused."""
        if approval.state != ApprovalState.PENDING or policy.on_timeout != "decline":
            return
        if overdue(approval, self.deps.clock()):  # this worker's guess: the store judges
            await self._expire(approval)

    async def _expire(self, approval: Approval) -> None:
        """Decline an approval as expired and refuse the decision, if its deadline passed by
        the database's clock; nothing if the store finds it not due yet."""
        try:
            await self.decline_expired(approval)
        except store_errors.Conflict:
            return  # not due yet: this worker's clock runs ahead
        except errors.AlreadyDecided:
            pass
        raise errors.ApprovalExpired(
            f"approval {approval.id} expired at {approval.deadline:%Y-%m-%d %H:%M:%S} UTC; "
            "it was declined as expired",
            approval=await self.get(approval.id),
        )

    async def decline_expired(self, approval: Approval) -> Approval:
        """Decline an approval as expired (the scheduler at its deadline, or a decision that
        came too late): `Conflict` unless its deadline passed by the database's clock."""
        return await self.record_decision(
            approval, ApprovalState.DECLINED, by=SYSTEM_ACTOR, reason="expired", due_only=True
        )

    async def withdraw(self, run_id: str, *, by: str, reason: str) -> None:
        """Decline a run's pending approvals because the run no longer waits (cancelled,
        rolled back). A withdrawal is not a person's "no": the call may be asked again."""
        for approval in await self.store.list_approvals(run_id=run_id, state=ApprovalState.PENDING):
            with contextlib.suppress(errors.AlreadyDecided):
                await self.record_decision(
                    approval,
                    ApprovalState.DECLINED,
                    by=SYSTEM_ACTOR,
                    reason=f"withdrawn: {reason} by {by}",
                    resume=False,
                )

    async def get(self, approval_id: str) -> Approval:
        return await lookups.approval(self.store, approval_id)

    async def record_decision(
        self,
        approval: Approval,
        state: ApprovalState,
        *,
        by: str,
        reason: str | None,
        due_only: bool = False,
        resume: bool = True,
    ) -> Approval:
        """A decision the system makes (expiry, withdrawal), by compare-and-set with its
        audit event; then tell the notifier and resume the run (unless `resume=False`)."""
        decided = await recording.record(
            self.store,
            approval,
            state,
            by=by,
            reason=reason,
            at=self.deps.clock(),
            due_only=due_only,
        )
        recording.log_decided(decided)
        await self.after_decision(decided, resume)
        return decided

    # timed work

    async def tick(self, now: datetime) -> datetime | None:
        """Expire, remind and escalate whatever is due; return when the next thing falls due.
        A worker that stepped aside for a newer schema leaves them to the workers that know it."""
        if self.deps.aside.active:
            return None
        await self._cool_offs_ended()
        due = await timers.tick(self, self.deps.announcer, now)
        ends = await self.store.next_cool_off_end()
        return min((at for at in (due, ends) if at is not None), default=None)

    async def _cool_offs_ended(self) -> None:
        """Resume each run parked on an approved call whose cool-off ended (issue 42.6), in a
        task of its own: the call runs in its run's driver, which claims it by
        compare-and-set; a run resumed twice runs it once."""
        if self.resume_run is None:
            return
        for run_id in await self.store.cool_offs_ended():
            task = asyncio.get_running_loop().create_task(self.resume_run(run_id))
            self._resuming.add(task)
            task.add_done_callback(self._resuming.discard)
