"""The approval desk: creating approvals under their policy and deciding them (docs/architecture.md
rules 4, 9). The time-driven work the scheduler triggers (reminders, escalation, expiry) is in
`runtime.approvals.timers`.

Every state change is a compare-and-set in the store, so a decision, a reminder or an expiry
that is attempted twice, or by two processes at once, happens once. One job, an approval's
life up to its decision; long because each check a decision passes is its own short method.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any, Literal

from runtime import errors
from runtime.approvals import timers
from runtime.approvals.binding import conflict_of, conflict_text, differences
from runtime.approvals.naming import about, decided_text, decision_text, log_ids, overdue
from runtime.approvals.policy import SYSTEM_ACTOR, Directory, Policies, Policy, may_decide
from runtime.approvals.routing import Route, decided_at_once, policy_of, route
from runtime.approvals.rules import Facts
from runtime.deps import Deps
from runtime.tools import ToolArgumentError
from store import Approval, ApprovalState, AuditEvent, Delivery, Run, Store
from store import errors as store_errors
from store.digest import args_digest
from store.records import SENSITIVE_MASK, EffectConflict, masked

log = logging.getLogger("signoff.approvals")

Decision = Literal["approved", "declined"]
DUPLICATE_WINDOW = timedelta(days=7)  # how long an approved request marks later ones


class ApprovalDesk:
    def __init__(
        self,
        deps: Deps,
        policies: Policies,
        directory: Directory,
        after_decision: Callable[[Approval, bool], Awaitable[None]],
    ) -> None:
        """`after_decision(approval, resume)` runs once a decision is durable: tell the
        notifier, resume the run it unblocks (unless `resume` is False)."""
        self.deps = deps
        self.store: Store = deps.store
        self.policies = policies
        self.directory = directory
        self.after_decision = after_decision

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
        now = self.deps.clock()
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
            next_reminder_at=now + rules.remind_every
            if rules.remind_every is not None and _reminds(rules)
            else None,
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
            about(approval),
            approval.state.value,
            rule,
            extra=log_ids(approval, approval.state.value),
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
            since=self.deps.clock() - DUPLICATE_WINDOW,
        )
        if other is None or other.run_id is None:
            return approval
        asked = other.shown_approved_args or other.shown_args
        return approval.model_copy(update={"duplicate_of": other.run_id, "duplicate_args": asked})

    async def with_conflict(self, approval: Approval) -> Approval:
        """The approval naming the earlier effect made under its key with other arguments,
        if any: approving it as it is would not do what the approver sees."""
        conflict = await self._conflict(approval, approval.shown_digest)
        return approval if conflict is None else approval.model_copy(update={"conflict": conflict})

    async def _conflict(self, approval: Approval, digest: str) -> EffectConflict | None:
        if approval.idempotency_key is None:
            return None
        other = await self.store.conflicting_effect(approval.idempotency_key, digest)
        if other is None:
            return None
        approved = None
        if other.approval_id is not None:
            with contextlib.suppress(store_errors.NotFound):
                approved = await self.store.get_approval(other.approval_id)
        return conflict_of(other, approved)

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
    ) -> Approval:
        """Record a human's decision; returns the approval (still pending while a quorum forms).

        `resume=False`: return once the decision is durable; the caller resumes the run.
        `separate`: approve a call whose key an earlier effect used with other arguments as
        an effect of its own (it is re-keyed); without it such an approval is refused."""
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
        key_suffix = await self._check_conflict(approval, decision, approved_args, separate)
        if decision == "approved" and approval.required_approvals > 1:
            votes = await self._vote(approval, by)
            if votes < approval.required_approvals:
                return approval
        try:
            return await self.record_decision(
                approval,
                ApprovalState(decision),
                by=by,
                reason=reason,
                approved_args=approved_args,
                open_only=policy.on_timeout == "decline",
                defer=not resume,
                key_suffix=key_suffix,
            )
        except errors.ApprovalExpired:  # past the deadline by the database's clock
            await self._expire(approval)
            raise

    async def _check_conflict(
        self,
        approval: Approval,
        decision: Decision,
        approved_args: dict[str, Any] | None,
        separate: bool,
    ) -> str | None:
        """The key suffix of an approval as a separate effect; refuses a plain approval of a
        call whose key an earlier effect used with other arguments, and a needless separate."""
        if decision != "approved":
            if separate:
                raise errors.InvalidRequest("only an approval can be separate; a decline is not")
            return None
        digest = args_digest(approved_args if approved_args is not None else approval.args)
        conflict = await self._conflict(approval, digest)
        if separate:
            if conflict is None and approval.conflict is None:
                raise errors.InvalidRequest(
                    f"approval {approval.id}: no earlier effect used its key with other "
                    "arguments, so there is nothing to be separate from; approve it as it is"
                )
            return approval.id
        if conflict is not None:
            raise errors.KeyConflict(
                conflict_text(
                    conflict,
                    approved_args if approved_args is not None else approval.args,
                    approval.sensitive,
                ),
                conflict=conflict,
            )
        return None

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
            await self.record_decision(
                approval, ApprovalState.DECLINED, by=SYSTEM_ACTOR, reason="expired", due_only=True
            )
        except store_errors.Conflict:
            return  # not due yet: this worker's clock runs ahead
        except errors.AlreadyDecided:
            pass
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
                await self.record_decision(
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
            raise errors.ApprovalNotFound(
                f"no approval {approval_id!r}", ident=approval_id
            ) from None

    async def check_decider(self, approval: Approval, decision: Decision, by: str) -> None:
        """Refuse `by` as `decide` would (not pending, not an approver) without deciding:
        a surface asks before it opens a form for the decision."""
        await self._check_decider(approval, self.policy_of(approval), decision, by)

    async def _check_decider(
        self, approval: Approval, policy: Policy, decision: Decision, by: str
    ) -> None:
        if approval.state != ApprovalState.PENDING:
            raise errors.AlreadyDecided(decided_text(approval), approval=approval)
        # Past an escalating deadline the escalation is due, whether or not a scheduler has
        # run since (the server may be down while someone decides from the CLI).
        due = policy.on_timeout == "escalate" and overdue(approval, self.deps.clock())
        escalated = approval.escalated or due
        if not await may_decide(policy, by, self.directory, escalated=escalated):
            raise errors.NotAnApprover(
                f"{by} is not an approver for {approval.tool} under policy {approval.policy!r}",
                approval=approval,
                by=by,
            )
        if (
            decision == "approved"
            and by == approval.requested_by
            and not policy.allow_self_approval
        ):
            raise errors.SelfApproval(
                f"{by} requested this action and policy {approval.policy!r} forbids self-approval",
                approval=approval,
                by=by,
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
        tool = await self.deps.tool_for(approval)
        if tool is None:
            return args
        try:
            edited = tool.validate(args)
        except ToolArgumentError as exc:
            raise errors.EditRefused(str(exc)) from None
        identity = tool.business_id(approval.args)
        if tool.business_id(edited) != identity:
            changes = differences(approval.args, edited)
            named = [
                n for n, _, v in changes if tool.business_id({**approval.args, n: v}) != identity
            ]
            changed = ", ".join(named or [n for n, _, _ in changes])
            raise errors.EditRefused(
                f"the edit changes what {approval.tool} acts on ({changed}: its identity, "
                "the key it runs under); decline and ask for a new request instead"
            )
        return edited

    async def _vote(self, approval: Approval, by: str) -> int:
        voted = await self.store.list_votes(approval.id)
        if by in voted:
            waits = approval.required_approvals - len(voted)
            raise errors.AlreadyVoted(
                f"{by} already approved {approval.id}; it waits for {waits} more approver(s)",
                by=by,
            )
        try:
            votes = await self.store.add_vote(approval.id, by, self.deps.clock())
        except store_errors.AlreadyDecided as exc:
            raise _already_decided(exc) from None
        except store_errors.AlreadyVoted:  # the same person, at the same moment, elsewhere
            waits = approval.required_approvals - len(await self.store.list_votes(approval.id))
            raise errors.AlreadyVoted(
                f"{by} already approved {approval.id}; it waits for {waits} more approver(s)",
                by=by,
            ) from None
        await self.store.record_event(
            AuditEvent(
                action="vote",
                actor=by,
                run_id=approval.run_id,
                approval_id=approval.id,
                detail={"votes": votes, "required": approval.required_approvals},
                at=self.deps.clock(),
            )
        )
        log.info(
            "%s: approved by %s, %d of %d approvals",
            about(approval),
            by,
            votes,
            approval.required_approvals,
            extra=log_ids(approval, "voted"),
        )
        return votes

    async def record_decision(
        self,
        approval: Approval,
        state: ApprovalState,
        *,
        by: str,
        reason: str | None,
        approved_args: dict[str, Any] | None = None,
        due_only: bool = False,
        open_only: bool = False,
        resume: bool = True,
        defer: bool = False,
        key_suffix: str | None = None,
    ) -> Approval:
        """Compare-and-set the decision with its audit event, then tell the notifier and
        resume (unless `resume=False`). `defer`: only record; the caller runs
        `Runtime.after_decision` once it has answered."""
        now = self.deps.clock()
        approved_digest = None
        if state == ApprovalState.APPROVED:
            approved_digest = args_digest(
                approved_args if approved_args is not None else approval.args
            )
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
                **_binding_detail(approval, approved_args, approved_digest, key_suffix),
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
                due_only=due_only,
                open_only=open_only,
                event=event,
                approved_digest=approved_digest,
                key_suffix=key_suffix,
            )
        except store_errors.AlreadyDecided as exc:
            raise _already_decided(exc) from None
        except store_errors.Expired as exc:
            raise errors.ApprovalExpired(str(exc), approval=approval) from None
        log.info("%s %s", about(decided), decision_text(decided), extra=log_ids(decided, "decided"))
        if not defer:
            await self.after_decision(decided, resume)
        return decided

    # timed work

    async def tick(self, now: datetime) -> datetime | None:
        """Expire, remind and escalate whatever is due; return when the next thing falls due."""
        return await timers.tick(self, self.deps.announcer, now)


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


def _binding_detail(
    approval: Approval,
    approved_args: dict[str, Any] | None,
    approved_digest: str | None,
    key_suffix: str | None,
) -> dict[str, Any]:
    """What the audit says of the call a decision binds: the digests shown and approved, each
    edited argument (proposed -> approved), and a choice to run it as a separate effect."""
    if approved_digest is None:
        return {}
    # A digest of arguments with a secret in them could be matched by guessing: not shown.
    detail: dict[str, Any] = {}
    if not approval.sensitive:
        detail |= {"args_digest": approval.shown_digest, "approved_digest": approved_digest}
    if approved_args is not None:
        shown, approved = (
            masked(approval.args, approval.sensitive),
            masked(approved_args, approval.sensitive),
        )
        edits = {
            name: {"proposed": a, "approved": b} for name, a, b in differences(shown, approved)
        }
        if edits:
            detail["edited"] = edits
    if key_suffix is not None:
        detail["separate"] = {
            "key_suffix": key_suffix,
            "conflict": approval.conflict and approval.conflict.model_dump(mode="json"),
        }
    return detail


def _reminds(policy: Policy) -> bool:
    return policy.remind_every is not None and (
        policy.max_reminders > 0 or bool(policy.escalate_to)
    )


def _already_decided(exc: store_errors.AlreadyDecided) -> errors.AlreadyDecided:
    """The store lost a race to another decision: say who won, and when."""
    approval = getattr(exc, "approval", None)
    text = decided_text(approval) if isinstance(approval, Approval) else str(exc)
    return errors.AlreadyDecided(text, approval=approval)
