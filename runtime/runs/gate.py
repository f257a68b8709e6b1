"""The approvals a run asks for before its calls run: made for every call of a step that
needs one in one transaction with the step, passed through learned rules, announced; and
the approval a call that ran into a key conflict parks on. The run reaches approvals
through the narrow `runtime.ports.Approvals`."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping

from runtime.approvals import CallContext
from runtime.approvals import conflict_of
from runtime.approvals import gather_context
from runtime.approvals import log_rule_decision
from runtime.approvals import stated_reason
from runtime.ports import Approvals
from runtime.runs import results
from runtime.runs import shadow
from runtime.runs.budget import StopReason
from runtime.runs.planning import Plan
from runtime.runs.session import Session
from store import Approval
from store import ApprovalState
from store import Effect
from store import RunStatus
from store import errors


class Gate:
    def __init__(self, session: Session, approvals: Approvals) -> None:
        self.session = session
        self.approvals = approvals

    async def request(
        self,
        plans: list[Plan],
        effects: dict[str, Effect],
        approvals: dict[str, Approval],
    ) -> dict[str, Effect | Approval]:
        """Create approvals for every call that needs one, in one transaction, and notify.
        `approvals` gains those created; returned are the calls the lineage answered
        already (a completed effect, or a decline)."""
        session, journal = self.session, self.session.journal
        asked = [
            p
            for p in plans
            if p.needs_approval and p.call.id not in approvals and p.call.id not in effects
        ]
        if not asked:
            return {}
        drafted = [await self.drafted(p) for p in asked]
        shown = await asyncio.gather(
            *(self.shown(p, a) for p, a in zip(asked, drafted, strict=True))
        )
        wanted = [await self.approvals.annotate(a) for a in shown]
        run_now = journal.run_now()
        wanted = [await session.deps.with_learned_rule(a, run_now) for a in wanted]
        admit = {}
        for approval in wanted:  # the limits and envelopes that decide it in its transaction
            if (spend := await self.approvals.plan_spend(approval, run_now)) is not None:
                admit[approval.id] = spend
        committed = await journal.write(request=wanted, admit=admit)
        prior: dict[str, Effect | Approval] = {**committed.preempted, **committed.prior_decisions}
        created = [
            committed.admitted.get(a.call_id or "", a) for a in wanted if a.call_id not in prior
        ]
        approvals.update({a.call_id: a for a in created if a.call_id})
        run = journal.run_now()
        for approval in created:
            journal.track(approval)
            shadow.observe(session.deps.telemetry, approval)
            if approval.state == ApprovalState.PENDING:
                await session.deps.announcer.approval_requested(approval, run)
            else:  # a rule approved or denied it at once: no one is asked
                log_rule_decision(approval)
        return prior

    async def shown(
        self, plan: Plan, approval: Approval, found: CallContext | None = None
    ) -> Approval:
        """The approval with what its approver is shown beside the call: the agent's stated
        reason and the facts the tool's context function reads (`found`, if read already)."""
        transcript = self.session.journal.transcript
        reason = stated_reason(transcript, plan.call.id)
        if found is None and plan.tool is not None:
            found = await gather_context(plan.tool, plan.args or {})
        update: dict[str, object] = {"agent_reason": reason}
        question = results.question_before(transcript, plan.call.name)
        if question is not None and approval.reasked is None:  # the agent's answer: its reason
            update["reasked"] = question
        if found is not None:
            update |= {
                "context": found.facts,
                "context_error": found.unavailable,
                "context_digest": found.digest,
            }
        return approval.model_copy(update=update)

    async def drafted(self, plan: Plan) -> Approval:
        """The call's approval as its rules route it (with its limits, if they read them)."""
        limits = None
        if not plan.unasked:
            run = self.session.journal.run_now()
            limits = await self.approvals.limit_values(plan.call.name, plan.args or {}, run)
        return self.new_approval(plan, limits)

    def new_approval(
        self, plan: Plan, limits: Mapping[str, Mapping[str, int]] | None = None
    ) -> Approval:
        return self.approvals.new_approval(
            tool=plan.call.name,
            args=plan.args or {},
            run=self.session.journal.run_now(),  # its usage so far, which rules may look at
            call_id=plan.call.id,
            idempotency_key=plan.key,
            sensitive=plan.tool.sensitive if plan.tool else (),
            unasked=plan.unasked,
            limits=limits,
        )

    async def ask_again(
        self, plan: Plan, approved: Approval, reasked: dict[str, str], found: CallContext
    ) -> bool:
        """Park the run on a new approval of a call already approved, which must not run as
        it was approved (the facts changed, or the approval outlived its validity), showing
        why. A person decides it: no rule does. False if the lineage answered the call."""
        approval = await self.shown(plan, self.new_approval(plan), found)
        reasked = reasked | {"approval_id": approved.id}
        update = {"reasked": reasked, "conflict": approved.conflict}
        return await self._park_on(approval.model_copy(update=update))

    async def _park_on(self, approval: Approval) -> bool:
        """Write the approval, pending, with the run parked on it, and announce it."""
        session = self.session
        approval = approval.model_copy(
            update={
                "state": ApprovalState.PENDING,
                "decided_by": None,
                "decided_at": None,
                "reason": None,
                "approved_digest": None,
            }
        )
        committed = await session.journal.write(
            status=RunStatus.WAITING_APPROVAL,
            stop_reason=StopReason.WAITING_APPROVAL,
            request=[approval],
        )
        if approval.call_id in {**committed.preempted, **committed.prior_decisions}:
            return False
        await session.deps.announcer.approval_requested(approval, session.journal.run_now())
        return True

    async def ask_about_conflict(self, plan: Plan, other: Effect) -> bool:
        """Park the run on a new approval of the call that shows the conflict. A rule never
        decides it: only a person chooses between declining and a separate effect. False if
        the lineage already answered this call (the caller stops and pages instead)."""
        session = self.session
        approval = await self.shown(plan, self.new_approval(plan))
        approved = None
        if other.approval_id is not None:
            with contextlib.suppress(errors.NotFound):
                approved = await session.deps.store.get_approval(other.approval_id)
        return await self._park_on(
            approval.model_copy(update={"conflict": conflict_of(other, approved)})
        )
