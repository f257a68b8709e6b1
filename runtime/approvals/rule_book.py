"""The runtime's commands on learned rules: propose (with a backtest), make, confirm,
revoke, list, remind, and apply one to a new approval (`runtime.approvals.learned_rules` holds the
pure parts). Every surface reaches them through `Runtime.rules`.

Making a rule is checked like the file's rules: its condition must be CEL over the tool's
own arguments (`runtime.approvals.rule_check`), its expiry within the configured maximum, its
author a rule-writer. A rule that would have approved something a person declined is made only with
`confirm_declined`; a rule for a tool whose effect cannot be compensated waits, `proposed`,
for a second rule-writer. An approval the rules of the file already decide, or that needs
more than one approval, is never approved by a learned rule. Each check a
learned rule passes is its own short method.
"""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import replace
from datetime import datetime
from datetime import timedelta

from runtime.approvals import replay as replaying
from runtime.approvals.learned_rules import Backtest
from runtime.approvals.learned_rules import Draft
from runtime.approvals.learned_rules import LearnedRulesConfig
from runtime.approvals.learned_rules import NeedsConfirmation
from runtime.approvals.learned_rules import Proposal
from runtime.approvals.learned_rules import RuleNotFound
from runtime.approvals.learned_rules import RuleRefused
from runtime.approvals.learned_rules import backtest
from runtime.approvals.learned_rules import suggest
from runtime.approvals.policy import Directory
from runtime.approvals.policy import Policies
from runtime.approvals.policy import approved_at_once
from runtime.approvals.rules import Facts
from runtime.approvals.rules import RuleEvaluationError
from runtime.approvals.rules import RuleSyntaxError
from runtime.approvals.rules import activation
from runtime.approvals.rules import holds
from runtime.tools import Tool
from store import Approval
from store import ApprovalState
from store import AuditEvent
from store import Run
from store import Store
from store import errors as store_errors
from store.records import LearnedRule
from store.records import RuleMatch


@dataclass(frozen=True, slots=True)
class RuleUses:
    """The approvals a rule approved since its last note: (approval id, run id, created)."""

    rule: LearnedRule
    approvals: tuple[tuple[str, str | None, datetime], ...]


@dataclass(eq=False, repr=False)
class RuleBook:
    store: Store
    clock: Callable[[], datetime]
    config: LearnedRulesConfig
    directory: Directory
    tool: Callable[[str], Tool | None]
    """`tool(name)`: the registered tool of that name, if any (its arguments and whether
    its effect can be compensated)."""

    # who may write

    async def may_write(self, user: str) -> bool:
        for who in self.config.writers:
            if who == user or (who.startswith("S") and user in await self.directory.members(who)):
                return True
        return False

    async def _check_writer(self, user: str) -> None:
        if not await self.may_write(user):
            raise RuleRefused(f"{user} may not write approval rules (learned_rules.writers)")

    # proposing and making

    def suggest(self, tool: str, args: dict[str, object]) -> str:
        return suggest(tool, args)

    async def backtest(self, tool: str, condition: str, *, size: int | None = None) -> Backtest:
        self._check_condition(tool, condition)
        requests = await self.store.backtest_requests(tool, limit=size or self.config.backtest_size)
        tested = backtest(tool, condition, requests, ceiling=self.config.ceilings.get(tool))
        return await self._with_cards(tested)

    async def replay(self, policies: Policies, tool: str, *, size: int) -> replaying.Replay:
        """The newest `size` requests of `tool` replayed through `policies`' rules: those
        that would have gone otherwise (`signoff policy backtest`)."""
        requests = await self.store.backtest_requests(tool, limit=size)
        return replaying.replay(policies, tool, requests)

    async def _with_cards(self, tested: Backtest) -> Backtest:
        """Each declined or edited request with its card's place, so surfaces can link it."""
        hits = []
        for hit in tested.hits:
            if hit.outcome in ("declined", "edited"):
                try:
                    found = await self.store.get_approval(hit.approval_id)
                except store_errors.NotFound:  # pruned since; the audit trail keeps it
                    found = None
                if found is not None and found.channel and found.message_ts:
                    hit = replace(hit, card=(found.channel, found.message_ts))
            hits.append(hit)
        return replace(tested, hits=tuple(hits))

    def draft(self, tool: str, condition: str | None, args: dict[str, object]) -> Draft:
        """The rule a call suggests (or `condition`), before any backtest: reads nothing."""
        return Draft(
            tool=tool,
            condition=condition or suggest(tool, args),
            expiry=self.config.default_expiry,
            max_expiry=self.config.max_expiry,
            ceiling=self.config.ceilings.get(tool),
            needs_second=self._needs_second(tool),
        )

    async def propose(self, tool: str, condition: str | None, args: dict[str, object]) -> Proposal:
        """The rule a call suggests (or `condition`), with its backtest; saves nothing."""
        drafted = self.draft(tool, condition, args)
        return drafted.tested(await self.backtest(tool, drafted.condition))

    async def make(
        self,
        tool: str,
        condition: str,
        *,
        author: str,
        reason: str,
        expires_in: timedelta | None = None,
        from_approval: str | None = None,
        confirm_declined: bool = False,
    ) -> tuple[LearnedRule, Backtest]:
        """Store a rule: active at once, or `proposed` until a second writer confirms it."""
        await self._check_writer(author)
        if not reason.strip():
            raise RuleRefused("a rule needs a reason (why calls like this need no one)")
        expiry = expires_in or self.config.default_expiry
        if expiry <= timedelta(0) or expiry > self.config.max_expiry:
            days = self.config.max_expiry.days
            raise RuleRefused(f"a rule expires within {days} days (max_expiry), not {expiry}")
        tested = await self.backtest(tool, condition)
        if tested.declined and not confirm_declined:
            raise NeedsConfirmation(
                f"the rule would have approved {len(tested.declined)} request(s) a person "
                "declined; confirm that explicitly to make it",
                backtest=tested,
            )
        now = self.clock()
        second = self._needs_second(tool)
        rule = LearnedRule(
            id=f"lr_{uuid.uuid4().hex[:12]}",
            tool=tool,
            condition=condition,
            author=author,
            reason=reason.strip(),
            state="proposed" if second else "active",
            needs_second=second,
            from_approval=from_approval,
            created_at=now,
            expires_at=now + expiry,
        )
        event = _event("rule_made", author, rule, now, backtest=tested.as_dict())
        await self.store.create_learned_rule(rule, event=event)
        return rule, tested

    async def confirm(self, rule_id: str, *, by: str) -> LearnedRule:
        """A second rule-writer's confirmation: the rule is active from now."""
        await self._check_writer(by)
        rule = await self.get(rule_id)
        if rule.state != "proposed":
            raise RuleRefused(f"rule {rule_id} is {rule.status(self.clock())}, not proposed")
        if rule.author == by:
            raise RuleRefused(
                f"rule {rule_id} needs a second rule-writer: someone else than its author "
                f"{rule.author} confirms it"
            )
        now = self.clock()
        event = _event("rule_confirmed", by, rule, now)
        if not await self.store.confirm_learned_rule(rule_id, by=by, at=now, event=event):
            raise RuleRefused(f"rule {rule_id} is {(await self.get(rule_id)).status(now)}")
        return await self.get(rule_id)

    async def revoke(self, rule_id: str, *, by: str) -> LearnedRule:
        rule = await self.get(rule_id)
        if by != rule.author:
            await self._check_writer(by)
        now = self.clock()
        event = _event("rule_revoked", by, rule, now)
        if not await self.store.revoke_learned_rule(rule_id, by=by, at=now, event=event):
            raise RuleRefused(f"rule {rule_id} was revoked already")
        return await self.get(rule_id)

    # reading

    async def get(self, rule_id: str) -> LearnedRule:
        try:
            return await self.store.get_learned_rule(rule_id)
        except store_errors.NotFound:
            raise RuleNotFound(f"no rule {rule_id!r}", rule_id=rule_id) from None

    async def list(self, *, tool: str | None = None) -> builtins.list[LearnedRule]:
        return await self.store.list_learned_rules(tool=tool)

    async def expiring(self) -> builtins.list[LearnedRule]:
        """Rules whose author is due the reminder that they expire soon; each is returned
        once (compare-and-set), with its use count."""
        now = self.clock()
        due = await self.store.learned_rules_expiring(
            now=now, before=now + self.config.remind_before
        )
        return [r for r in due if await self.store.mark_learned_rule_reminded(r.id, at=now)]

    async def uses_to_tell(self) -> builtins.list[RuleUses]:
        """Each rule's approvals since its last thread note, once (compare-and-set): what
        the quiet, batched note under the card it grew from says."""
        told = []
        for rule in await self.list():
            if rule.from_approval is None:
                continue
            since = rule.noted_until or rule.created_at
            uses = await self.store.learned_rule_uses_since(rule.id, after=since)
            if not uses:
                continue
            until = uses[-1][2]
            if await self.store.mark_learned_rule_noted(rule.id, since=since, until=until):
                told.append(RuleUses(rule, tuple(uses)))
        return told

    # applying

    async def apply(self, approval: Approval, run: Run | None) -> Approval:
        """The approval, approved at once by the first learned rule in force that holds for
        it within the tool's ceiling; unchanged if none does. Without rule-writers configured
        no learned rule applies (and no read is spent on each approval)."""
        if not self.config.writers or not self._may_apply(approval):
            return approval
        store = self.store
        rules = await store.learned_rules_in_force(approval.tool, now=approval.created_at)
        if not rules:
            return approval
        context = activation(approval.tool, approval.args, _facts(run, approval))
        ceiling = self.config.ceilings.get(approval.tool)
        for rule in rules:
            if _holds(rule.condition, context) and (ceiling is None or _holds(ceiling, context)):
                return _approved_by(approval, rule)
        return approval

    def _may_apply(self, approval: Approval) -> bool:
        match = approval.rule
        if approval.state != ApprovalState.PENDING or approval.required_approvals > 1:
            return False
        if approval.conflict is not None:  # a key conflict is a person's call, never a rule's
            return False
        return match is None or (match.action == "ask" and match.kind != "error")

    # checks

    def _check_condition(self, tool: str, condition: str) -> None:
        from runtime.approvals.routing import tool_arg_types
        from runtime.approvals.rule_check import check

        found = self.tool(tool)
        if found is None:
            raise RuleRefused(f"no tool {tool!r} here to make a rule for")
        try:
            problems = check(condition, tool, tool_arg_types(found))
        except RuleSyntaxError as exc:
            raise RuleRefused(str(exc)) from None
        if problems:
            raise RuleRefused(f"`{condition}`: {'; '.join(problems)}")

    def _needs_second(self, tool: str) -> bool:
        found = self.tool(tool)
        return found is None or found.effect == "irreversible"


def _holds(condition: str, context: dict[str, object]) -> bool:
    try:
        return holds(condition, context)
    except RuleEvaluationError:
        return False  # a learned rule that cannot be evaluated never approves


def _facts(run: Run | None, approval: Approval) -> Facts:
    if run is None:
        return Facts(requested_by=approval.requested_by or "", now=approval.created_at)
    return Facts(
        run_id=run.id,
        agent=run.agent,
        task=run.task,
        requested_by=run.requested_by or "",
        now=approval.created_at,
    )


def _approved_by(approval: Approval, rule: LearnedRule) -> Approval:
    summary = f"learned rule {rule.id} ({rule.reason}, by {rule.author}) → approved at once"
    match = RuleMatch(
        kind="matched",
        action="auto_approve",
        when=rule.condition,
        label=rule.reason,
        summary=summary,
        policy=approval.rule.policy if approval.rule else {},
        learned_id=rule.id,
    )
    return approved_at_once(approval, match)


def _event(action: str, actor: str, rule: LearnedRule, at: datetime, **more: object) -> AuditEvent:
    detail = {"rule_id": rule.id, "tool": rule.tool, "when": rule.condition, "reason": rule.reason}
    return AuditEvent(action=action, actor=actor, at=at, detail=detail | more)
