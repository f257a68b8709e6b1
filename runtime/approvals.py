"""The approval desk: creating approvals under their policy, deciding them (DESIGN rules 4, 9),
and the time-driven work the scheduler triggers: reminders, escalation, expiry.

Every state change is a compare-and-set in the store, so a decision, a reminder or an expiry
that is attempted twice, or by two processes at once, happens once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from runtime import errors
from runtime.policy import SYSTEM_ACTOR, Directory, Policies, Policy, may_decide
from runtime.routing import Route, decided_at_once, policy_of, route
from runtime.rules import Facts
from runtime.tools import ToolArgumentError
from store import Approval, ApprovalState, AuditEvent, Delivery, Page, Run, Store
from store import errors as store_errors
from store.records import SENSITIVE_MASK, masked

if TYPE_CHECKING:
    from runtime.engine import Runtime

log = logging.getLogger("signoff.approvals")

Decision = Literal["approved", "declined"]
DUPLICATE_WINDOW = timedelta(days=7)  # how long an approved request marks later ones


class ApprovalDesk:
    def __init__(self, rt: Runtime, policies: Policies, directory: Directory) -> None:
        self.rt = rt
        self.store: Store = rt.store
        self.policies = policies
        self.directory = directory

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
    ) -> Approval:
        """A pending approval with its deadline and first reminder set from the policy its
        rules chose; decided already when a rule approves or denies the call at once."""
        name, tool_policy = self.policies.for_tool(policy or tool)
        now = self.rt.clock()
        asker = run.requested_by if run else requested_by
        routed: Route = route(name, tool_policy, tool, args, _facts(run, asker, now))
        if routed.match is not None and routed.match.kind == "error":
            log.warning("%s (run %s): %s", tool, run.id if run else "-", routed.match.summary)
        rules = routed.policy
        approval = Approval(
            id=approval_id or f"ap_{uuid.uuid4().hex[:20]}",
            tool=tool,
            args=args,
            policy=name,
            run_id=run.id if run else None,
            call_id=call_id,
            lineage_id=run.lineage_id if run else None,
            idempotency_key=idempotency_key,
            requested_by=run.requested_by if run else requested_by,
            required_approvals=rules.required_approvals,
            deadline=now + rules.timeout if rules.timeout else None,
            next_reminder_at=now + rules.remind_every if _reminds(rules) else None,
            channel=rules.channel,
            callback_url=callback_url,
            callback_status=Delivery.PENDING if callback_url else None,
            rule=routed.match,
            created_at=now,
            sensitive=sensitive,
        )
        return decided_at_once(approval, now)

    def policy_of(self, approval: Approval) -> Policy:
        """The policy an approval is decided under: the one its rule chose when it was made."""
        return policy_of(approval.rule, self.policies.for_tool(approval.policy)[1])

    def log_rule_decision(self, approval: Approval) -> None:
        """An approval a rule decided when it was made (the audit trail has it already: the
        database writes it with the approval)."""
        rule = approval.rule.summary if approval.rule else None
        log.info(
            "%s %s (%s)",
            _about(approval),
            approval.state.value,
            rule,
            extra=_ids(approval, approval.state.value),
        )

    async def with_duplicate(self, approval: Approval) -> Approval:
        """The approval naming another run that asked for the same effect (same idempotency
        key, another lineage), pending or approved within DUPLICATE_WINDOW: two requests to
        refund one order are shown to the approver as possible duplicates."""
        if approval.idempotency_key is None:
            return approval
        other = await self.store.duplicate_approval(
            approval.idempotency_key,
            lineage_id=approval.lineage_id,
            since=self.rt.clock() - DUPLICATE_WINDOW,
        )
        if other is None or other.run_id is None:
            return approval
        return approval.model_copy(update={"duplicate_of": other.run_id})

    def new_page(
        self, *, run_id: str | None, call_id: str | None, tool: str | None, reason: str, detail: str
    ) -> Page:
        """A page whose id is fixed by what it is about, so paging twice pages once."""
        return Page(
            id=f"pg_{run_id}_{call_id}_{reason}",
            run_id=run_id,
            call_id=call_id,
            tool=tool,
            reason=reason,
            detail=detail,
            created_at=self.rt.clock(),
        )

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
    ) -> Approval:
        """Record a human's decision; returns the approval (still pending while a quorum forms).

        `resume=False`: return once the decision is durable; the caller resumes the run."""
        if decision not in ("approved", "declined"):
            raise errors.InvalidRequest(f"a decision is 'approved' or 'declined', not {decision!r}")
        if not by:
            raise errors.InvalidRequest("a decision needs the deciding user's id")
        approval = await self.get(approval_id)
        policy = self.policy_of(approval)
        await self._expire_if_due(approval, policy)
        await self._check_decider(approval, policy, decision, by)
        approved_args = None
        if args is not None:
            if decision != "approved":
                raise errors.EditRefused("arguments can only be edited when approving")
            if approval.required_approvals > 1:
                raise errors.EditRefused(
                    f"policy {approval.policy!r} needs {approval.required_approvals} approvers; "
                    "they vote on the proposed arguments, which cannot be edited"
                )
            approved_args = await self._check_edit(approval, policy, args)
        if decision == "approved" and approval.required_approvals > 1:
            votes = await self._vote(approval, by)
            if votes < approval.required_approvals:
                return approval
        open_at = self.rt.clock() if policy.on_timeout == "decline" else None
        return await self.settle(
            approval,
            ApprovalState(decision),
            by=by,
            reason=reason,
            approved_args=approved_args,
            open_at=open_at,
            defer=not resume,
        )

    async def _expire_if_due(self, approval: Approval, policy: Policy) -> None:
        """A decision after the deadline of a policy that declines then comes too late: the
        approval is expired now (if the scheduler has not yet) and the decision refused."""
        now = self.rt.clock()
        if approval.state != ApprovalState.PENDING or not _overdue(approval, now):
            return
        if policy.on_timeout != "decline":
            return
        with contextlib.suppress(errors.AlreadyDecided, store_errors.Conflict):
            await self.settle(
                approval, ApprovalState.DECLINED, by=SYSTEM_ACTOR, reason="expired", not_before=now
            )
        raise errors.ApprovalExpired(
            f"approval {approval.id} expired at {approval.deadline:%Y-%m-%d %H:%M:%S} UTC; "
            "it was declined as expired",
            approval=await self.get(approval.id),
        )

    async def withdraw(self, run_id: str, *, by: str, reason: str) -> None:
        """Decline a run's pending approvals because the run no longer waits (cancelled,
        rolled back). A withdrawal is not a person's "no": the call may be asked again."""
        for approval in await self.store.list_approvals(run_id=run_id, state=ApprovalState.PENDING):
            with contextlib.suppress(errors.AlreadyDecided):
                await self.settle(
                    approval,
                    ApprovalState.DECLINED,
                    by=SYSTEM_ACTOR,
                    reason=f"withdrawn: {reason} by {by}",
                    resume=False,
                )

    async def get(self, approval_id: str) -> Approval:
        try:
            return await self.store.get_approval(approval_id)
        except store_errors.NotFound:
            raise errors.ApprovalNotFound(f"no approval {approval_id!r}") from None

    async def _check_decider(
        self, approval: Approval, policy: Policy, decision: Decision, by: str
    ) -> None:
        if approval.state != ApprovalState.PENDING:
            raise errors.AlreadyDecided(_decided_text(approval), approval=approval)
        # Past an escalating deadline the escalation is due, whether or not a scheduler has
        # run since (the server may be down while someone decides from the CLI).
        due = policy.on_timeout == "escalate" and _overdue(approval, self.rt.clock())
        escalated = approval.escalated or due
        if not await may_decide(policy, by, self.directory, escalated=escalated):
            raise errors.NotAnApprover(
                f"{by} is not an approver for {approval.tool} under policy {approval.policy!r}"
            )
        if (
            decision == "approved"
            and by == approval.requested_by
            and not policy.allow_self_approval
        ):
            raise errors.SelfApproval(
                f"{by} requested this action and policy {approval.policy!r} forbids self-approval"
            )

    async def _check_edit(
        self, approval: Approval, policy: Policy, args: dict[str, Any]
    ) -> dict[str, Any]:
        if not policy.allow_edit:
            raise errors.EditRefused(f"policy {approval.policy!r} does not allow editing arguments")
        # Approvers see a sensitive argument masked; the mask sent back means "as proposed".
        args = {
            name: approval.args.get(name, value)
            if name in approval.sensitive and value == SENSITIVE_MASK
            else value
            for name, value in args.items()
        }
        tool = await self.rt.tool_for(approval)
        if tool is None:
            return args
        try:
            return tool.validate(args)
        except ToolArgumentError as exc:
            raise errors.EditRefused(str(exc)) from None

    async def _vote(self, approval: Approval, by: str) -> int:
        voted = await self.store.list_votes(approval.id)
        if by in voted:
            waits = approval.required_approvals - len(voted)
            raise errors.AlreadyVoted(
                f"{by} already approved {approval.id}; it waits for {waits} more approver(s)"
            )
        try:
            votes = await self.store.add_vote(approval.id, by, self.rt.clock())
        except store_errors.AlreadyDecided as exc:
            raise _already_decided(exc) from None
        await self.store.record_event(
            AuditEvent(
                action="vote",
                actor=by,
                run_id=approval.run_id,
                approval_id=approval.id,
                detail={"votes": votes, "required": approval.required_approvals},
                at=self.rt.clock(),
            )
        )
        log.info(
            "%s: approved by %s, %d of %d approvals",
            _about(approval),
            by,
            votes,
            approval.required_approvals,
            extra=_ids(approval, "voted"),
        )
        return votes

    async def settle(
        self,
        approval: Approval,
        state: ApprovalState,
        *,
        by: str,
        reason: str | None,
        approved_args: dict[str, Any] | None = None,
        not_before: datetime | None = None,
        open_at: datetime | None = None,
        resume: bool = True,
        defer: bool = False,
    ) -> Approval:
        """Compare-and-set the decision with its audit event, then tell the notifier and
        resume (unless `resume=False`). `defer`: only record; the caller runs
        `Runtime.after_decision` once it has answered."""
        now = self.rt.clock()
        event = AuditEvent(
            action=f"approval_{state.value}",
            actor=by,
            run_id=approval.run_id,
            approval_id=approval.id,
            at=now,
            detail={
                "reason": reason,
                "tool": approval.tool,
                "policy": approval.policy,
                **(
                    {"approved_args": masked(approved_args, approval.sensitive)}
                    if approved_args
                    else {}
                ),
            },
        )
        try:
            decided = await self.store.decide_approval(
                approval.id,
                state,
                by=by,
                at=now,
                reason=reason,
                approved_args=approved_args,
                not_before=not_before,
                open_at=open_at,
                event=event,
            )
        except store_errors.AlreadyDecided as exc:
            raise _already_decided(exc) from None
        except store_errors.Expired as exc:
            raise errors.ApprovalExpired(str(exc), approval=approval) from None
        log.info("%s %s", _about(decided), _decision_text(decided), extra=_ids(decided, "decided"))
        if not defer:
            await self.rt.after_decision(decided, resume=resume)
        return decided

    # timed work (the scheduler calls these)

    async def tick(self, now: datetime) -> datetime | None:
        """Expire, remind and escalate whatever is due; return when the next thing falls due."""
        limit = 500
        while True:
            due = await self.store.due_approvals(now, limit=limit)
            # Independent approvals, each acted on by compare-and-set: their writes share
            # group commits instead of paying one fsync each.
            acted = await asyncio.gather(*(self._due(approval, now) for approval in due))
            if len(due) < limit or not any(acted):
                return await self.store.next_due_at()

    async def _due(self, approval: Approval, now: datetime) -> bool:
        """Act on one due approval; False if someone else already did (or it failed)."""
        policy = self.policy_of(approval)
        try:
            if _overdue(approval, now):
                await self._deadline_passed(approval, policy, now)
            elif approval.next_reminder_at is not None and approval.next_reminder_at <= now:
                await self._remind(approval, policy, now)
            return True
        except (errors.AlreadyDecided, store_errors.Conflict):
            log.info("approval %s changed while its timer fired; nothing to do", approval.id)
        except Exception:
            log.exception("approval %s: timed action failed; it stays due", approval.id)
        return False

    async def _deadline_passed(self, approval: Approval, policy: Policy, now: datetime) -> None:
        if policy.on_timeout == "escalate":
            moved = await self.store.extend_deadline(
                approval.id, deadline=None, expected=approval.deadline
            )
            if moved and not approval.escalated:  # escalated by reminders: told once already
                log.info(
                    "%s: deadline passed; escalated to %s, still waiting",
                    _about(approval),
                    policy.escalate_to or "its approvers",
                )
                escalated = approval.model_copy(update={"escalated": True, "deadline": None})
                await self.rt.announce_reminder(escalated, escalated=True)
            elif moved:
                log.info("%s: deadline passed; already escalated, still waiting", _about(approval))
            return
        await self.settle(
            approval, ApprovalState.DECLINED, by=SYSTEM_ACTOR, reason="expired", not_before=now
        )

    async def _remind(self, approval: Approval, policy: Policy, now: datetime) -> None:
        sent = approval.reminders_sent + 1
        escalate = sent > policy.max_reminders
        if escalate and (approval.escalated or not policy.escalate_to):
            stopped = await self.store.record_reminder(
                approval.id,
                reminders_sent=sent,
                next_reminder_at=None,
                escalated=approval.escalated,
            )
            if stopped:
                log.info("%s: no more reminders; still waiting", _about(approval))
            return
        more = policy.remind_every is not None and (
            sent < policy.max_reminders or (not escalate and bool(policy.escalate_to))
        )
        next_at = now + policy.remind_every if more and policy.remind_every else None
        recorded = await self.store.record_reminder(
            approval.id,
            reminders_sent=sent,
            next_reminder_at=next_at,
            escalated=approval.escalated or escalate,
        )
        if recorded:
            if escalate:
                log.info(
                    "%s: escalated to %s after %d reminder(s)",
                    _about(approval),
                    policy.escalate_to,
                    sent - 1,
                    extra=_ids(approval, "escalated"),
                )
            else:
                log.info(
                    "%s: reminder %d sent", _about(approval), sent, extra=_ids(approval, "reminded")
                )
            current = approval.model_copy(
                update={"reminders_sent": sent, "escalated": approval.escalated or escalate}
            )
            await self.rt.announce_reminder(current, escalated=escalate)


def _facts(run: Run | None, requested_by: str | None, now: datetime) -> Facts:
    if run is None:
        return Facts(requested_by=requested_by or "", now=now)
    return Facts(
        run_id=run.id,
        agent=run.agent,
        task=run.task,
        requested_by=run.requested_by or "",
        usage=run.usage.model_dump(),
        now=now,
    )


def _reminds(policy: Policy) -> bool:
    return policy.remind_every is not None and (
        policy.max_reminders > 0 or bool(policy.escalate_to)
    )


def _ids(approval: Approval, event: str) -> dict[str, Any]:
    """The fields a structured log line about an approval carries."""
    return {"approval_id": approval.id, "run_id": approval.run_id, "event": f"approval_{event}"}


def _about(approval: Approval) -> str:
    """`approval ap_1 (issue_refund, run order-4471)`: the head of every log line."""
    run = f", run {approval.run_id}" if approval.run_id else ""
    return f"approval {approval.id} ({approval.tool}{run})"


def _decision_text(approval: Approval) -> str:
    reason = approval.reason or ""
    if approval.decided_by == SYSTEM_ACTOR and reason == "expired":
        return "expired at its deadline: declined"
    if approval.decided_by == SYSTEM_ACTOR and reason.startswith("withdrawn"):
        return reason
    because = f": {reason!r}" if reason else ""
    return f"{approval.state.value} by {approval.decided_by}{because}"


def _decided_text(approval: Approval) -> str:
    """Who decided and when (and why, for a decline): what a refused decider needs to know."""
    by = approval.decided_by or "?"
    when = f" at {approval.decided_at:%Y-%m-%d %H:%M:%S} UTC" if approval.decided_at else ""
    declined = approval.state == ApprovalState.DECLINED
    why = f" ({approval.reason})" if approval.reason and declined else ""
    decided = f"{approval.state.value} by {by}{when}{why}"
    return f"approval {approval.id} was already {decided}; a decision never changes"


def _already_decided(exc: store_errors.AlreadyDecided) -> errors.AlreadyDecided:
    """The store lost a race to another decision: say who won, and when."""
    approval = getattr(exc, "approval", None)
    text = _decided_text(approval) if isinstance(approval, Approval) else str(exc)
    return errors.AlreadyDecided(text, approval=approval)


def _overdue(approval: Approval, now: datetime) -> bool:
    return approval.deadline is not None and approval.deadline <= now
