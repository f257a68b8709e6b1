"""The runtime's commands on limits and envelopes: the plan a new approval is admitted by
(its limits, the envelopes that may approve it), what an edit does to the amounts, what a
limit holds now, the record of each limit's definition, and making, confirming, revoking,
listing and ending envelopes. Every surface reaches them through `Runtime.spend`.

Who may hand out an envelope: an approver the tool's policy names (not "anyone"), or a
rule-writer; who may confirm one: another such person; who may revoke one: its author or a
rule-writer (`[learned_rules] writers`).
"""

from __future__ import annotations

import builtins
import logging
import uuid
from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import KW_ONLY
from dataclasses import dataclass
from dataclasses import field
from datetime import datetime
from datetime import timedelta
from typing import Any
from typing import Protocol

from runtime.approvals import Directory
from runtime.approvals import Facts
from runtime.approvals import LearnedRulesConfig
from runtime.approvals import Policies
from runtime.approvals import RuleSyntaxError
from runtime.approvals import facts_of
from runtime.approvals import may_decide
from runtime.approvals import rule_activation
from runtime.spend import counting
from runtime.spend import envelopes
from runtime.spend.admission import Admitting
from runtime.spend.admission import Redraft
from runtime.spend.admission import values
from runtime.spend.config import EnvelopesConfig
from runtime.spend.config import LimitConfig
from runtime.spend.envelopes import EnvelopeNotAllowed
from runtime.spend.envelopes import EnvelopeNotFound
from runtime.spend.envelopes import EnvelopeRefused
from runtime.tools import Tool
from store import Approval
from store import AuditEvent
from store import Run
from store import Store
from store import errors as store_errors
from store.records import Envelope
from store.records import LimitState
from store.spend import EnvelopeTry
from store.spend import SpendPlan

log = logging.getLogger("signoff.spend")


class _Changing(Protocol):
    """The store's confirmation or revocation of an envelope (compare-and-set)."""

    async def __call__(
        self, envelope_id: str, *, by: str, at: datetime, event: AuditEvent
    ) -> bool: ...


@dataclass(eq=False, repr=False)
class SpendDesk:
    store: Store
    clock: Callable[[], datetime]
    _: KW_ONLY
    limits: Mapping[str, LimitConfig]
    config: EnvelopesConfig
    policies: Policies
    learned: LearnedRulesConfig
    directory: Directory
    tool: Callable[[str], Tool | None]
    _recorded: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        self.limits = dict(self.limits)

    # limits

    def limited(self, tool: str) -> bool:
        """Whether any limit counts this tool's calls."""
        return bool(counting.applying(self.limits, tool))

    def states(self, tool: str, args: Mapping[str, Any], run: Run | None) -> tuple[LimitState, ...]:
        return counting.states(self.limits, tool, args, _facts(run, self.clock()))

    async def now(self, states: tuple[LimitState, ...]) -> tuple[LimitState, ...]:
        """The states with what each limit's window holds now (`used`, `calls`)."""
        keyed = [s for s in states if s.key is not None]
        usage = dict(zip([id(s) for s in keyed], await self.store.limit_usage(keyed), strict=True))
        return tuple(
            s.model_copy(update={"used": usage[id(s)][0], "calls": usage[id(s)][1]})
            if id(s) in usage
            else s
            for s in states
        )

    async def values(
        self, tool: str, args: Mapping[str, Any], run: Run | None
    ) -> dict[str, dict[str, int]]:
        """What the rules see of the call's limits, read now (the transaction reads again)."""
        return values(await self.now(self.states(tool, args, run)))

    def amounts(
        self, approval: Approval, args: Mapping[str, Any], run: Run | None
    ) -> dict[str, int]:
        """Each limit's amount for an edit's arguments."""
        facts = _facts(run, approval.created_at)
        return counting.amounts(self.limits, approval.tool, args, facts)

    async def record_definitions(self) -> builtins.list[str]:
        """Keep each limit's definition; a new or changed one is audited (`limit_changed`).
        Done once per process, before its first reservation."""
        if self._recorded or not self.limits:
            return []
        now = self.clock()
        definitions = {name: limit.definition() for name, limit in self.limits.items()}
        events = {
            name: AuditEvent(
                action="limit_changed",
                actor="signoff",
                at=now,
                detail={"limit": name, "now": limit.model_dump(mode="json")},
            )
            for name, limit in self.limits.items()
        }
        changed = await self.store.record_limits(definitions, events, at=now)
        self._recorded = True
        for name in changed:
            log.info("limit %s: counting as configured now (its change is audited)", name)
        return changed

    # admission

    async def plan(
        self,
        approval: Approval,
        run: Run | None,
        *,
        redraft: Redraft,
        reroute: Callable[[Mapping[str, Mapping[str, int]]], Approval] | None = None,
    ) -> SpendPlan | None:
        """How a new approval is admitted: None when no limit counts its tool and no
        envelope may approve it (it is created as it is)."""
        states = self.states(approval.tool, approval.args, run) if run is not None else ()
        tries, made = await self._envelope_tries(approval, run)
        if not states and not tries:
            return None
        await self.record_definitions()
        admitting = Admitting(
            approval=approval,
            limits=self.limits,
            policies=self.policies,
            redraft=redraft,
            reroute=reroute if states else None,
            envelopes=tries,
            by_envelope=lambda ap, each: envelopes.approved_by(ap, made[each.id]),
            envelope_eligible=envelopes.may_apply,
        )
        return SpendPlan(states, admitting.decide)

    async def _envelope_tries(
        self, approval: Approval, run: Run | None
    ) -> tuple[tuple[EnvelopeTry, ...], dict[str, Envelope]]:
        if run is None or not envelopes.may_apply(approval):
            return (), {}
        found = await self.store.envelopes_in_force(approval.tool, now=approval.created_at)
        if not found:
            return (), {}
        facts = _facts(run, approval.created_at)
        context = rule_activation(approval.tool, approval.args, facts)
        call = counting.CallValues(approval.tool, approval.args, facts)
        ceiling = self.learned.ceilings.get(approval.tool)
        shadow = self.config.mode == "shadow"
        tries = [envelopes.attempt(e, context, call, ceiling=ceiling, shadow=shadow) for e in found]
        kept = tuple(t for t in tries if t is not None)
        return kept, {e.id: e for e in found}

    # envelopes

    async def make(
        self,
        tool: str,
        condition: str,
        *,
        author: str,
        reason: str,
        max_amount: int | None = None,
        max_calls: int | None = None,
        amount: str | None = None,
        expires_in: timedelta | None = None,
        from_approval: str | None = None,
        channel: str | None = None,
    ) -> Envelope:
        """Hand out an envelope: active at once, or `proposed` until a second writer
        confirms it (a tool whose effect cannot be compensated, as `[envelopes]` says).
        `channel`: where its live message goes (else the approvals channel)."""
        found = self._check_tool(tool)
        await self.check_author(author, tool)
        if not reason.strip():
            raise EnvelopeRefused("an envelope needs a reason (why these calls need no one)")
        if max_amount is None and max_calls is None:
            raise EnvelopeRefused(
                "an envelope needs a budget: an amount, a number of calls, or both"
            )
        if any(n is not None and n < 1 for n in (max_amount, max_calls)):
            raise EnvelopeRefused("an envelope's amount and number of calls are at least 1")
        amount = amount or (self._money_arg(found) if max_amount is not None else None)
        if max_amount is not None and amount is None:
            raise EnvelopeRefused(
                f"{tool} declares no money argument: say what a call counts (--amount args.x)"
            )
        self._check_expressions(found, condition, amount)
        expiry = expires_in or self.config.default_expiry
        if expiry <= timedelta(0) or expiry > self.config.max_expiry:
            longest = _days(self.config.max_expiry)
            raise EnvelopeRefused(f"an envelope ends within {longest} (max_expiry), not {expiry}")
        now = self.clock()
        second = self._needs_second(found)
        envelope = Envelope(
            id=f"env_{uuid.uuid4().hex[:12]}",
            tool=tool,
            condition=condition,
            amount=amount,
            max_amount=max_amount,
            max_calls=max_calls,
            author=author,
            reason=reason.strip(),
            state="proposed" if second else "active",
            needs_second=second,
            mode=self.config.mode,
            from_approval=from_approval,
            channel=channel,
            created_at=now,
            expires_at=now + expiry,
        )
        await self.store.create_envelope(
            envelope, event=envelopes.event("envelope_made", author, envelope, now)
        )
        return envelope

    async def confirm(self, envelope_id: str, *, by: str) -> Envelope:
        """A second writer's confirmation: the envelope is active from now."""
        envelope = await self.get(envelope_id)
        await self.check_author(by, envelope.tool)
        if envelope.state != "proposed":
            raise EnvelopeRefused(
                f"envelope {envelope_id} is {envelope.status(self.clock())}, not proposed"
            )
        if envelope.author == by:
            raise EnvelopeRefused(
                f"envelope {envelope_id} needs a second writer: someone else than its author "
                f"{envelope.author} confirms it"
            )
        return await self._change(
            envelope, "envelope_confirmed", by, self.store.confirm_envelope, "is {}"
        )

    async def revoke(self, envelope_id: str, *, by: str) -> Envelope:
        """End an envelope now (its author or a rule-writer); calls then ask again."""
        envelope = await self.get(envelope_id)
        if by != envelope.author and not await self.may_write_rules(by):
            raise EnvelopeNotAllowed(
                f"{by} may not revoke envelope {envelope_id}: its author or a rule-writer may"
            )
        return await self._change(
            envelope, "envelope_revoked", by, self.store.revoke_envelope, "has ended already ({})"
        )

    async def _change(
        self, envelope: Envelope, kind: str, by: str, write: _Changing, refused: str
    ) -> Envelope:
        """Write a confirmation or revocation with its audit event `kind`, by compare-and-set;
        refused when the envelope changed first (`refused` says how, given its status now)."""
        now = self.clock()
        event = envelopes.event(kind, by, envelope, now)
        if not await write(envelope.id, by=by, at=now, event=event):
            status = (await self.get(envelope.id)).status(now)
            raise EnvelopeRefused(f"envelope {envelope.id} {refused.format(status)}")
        return await self.get(envelope.id)

    async def end_expired(self) -> builtins.list[str]:
        """Announce, once each, the envelopes that expired: audited, their message edited."""
        return await self.store.end_expired_envelopes()

    async def get(self, envelope_id: str) -> Envelope:
        try:
            return await self.store.get_envelope(envelope_id)
        except store_errors.NotFound:
            raise EnvelopeNotFound(
                f"no envelope {envelope_id!r}", envelope_id=envelope_id
            ) from None

    async def list(self, *, tool: str | None = None, limit: int = 100) -> builtins.list[Envelope]:
        return await self.store.list_envelopes(tool=tool, limit=limit)

    # who may

    async def may_hand_out(self, user: str, tool: str) -> bool:
        """An approver the tool's policy names (never "anyone"), or a rule-writer."""
        policy = self.policies.for_tool(tool)[1]
        if policy.approvers and await may_decide(policy, user, self.directory, escalated=False):
            return True
        return await self.may_write_rules(user)

    async def may_write_rules(self, user: str) -> bool:
        for who in self.learned.writers:
            if who == user or (who.startswith("S") and user in await self.directory.members(who)):
                return True
        return False

    async def check_author(self, user: str, tool: str) -> None:
        if not await self.may_hand_out(user, tool):
            raise EnvelopeNotAllowed(
                f"{user} may not hand out envelopes for {tool}: an approver its policy names, "
                "or a rule-writer, may"
            )

    def _check_tool(self, tool: str) -> Tool:
        found = self.tool(tool)
        if found is None:
            raise EnvelopeRefused(f"no tool {tool!r} here to hand out an envelope for")
        return found

    def _check_expressions(self, tool: Tool, condition: str, amount: str | None) -> None:
        from runtime.approvals import check_rule
        from runtime.approvals import tool_arg_types

        types = tool_arg_types(tool)
        for expression in [condition, *([amount] if amount else [])]:
            try:
                problems = check_rule(expression, tool.name, types)
            except RuleSyntaxError as exc:
                raise EnvelopeRefused(str(exc)) from None
            if problems:
                raise EnvelopeRefused(f"`{expression}`: {'; '.join(problems)}")

    def _needs_second(self, tool: Tool) -> bool:
        rule = self.config.second_writer
        return rule == "always" or (rule == "irreversible" and tool.effect == "irreversible")

    def currency(self, tool: str, amount: str | None) -> str | None:
        """The currency an envelope's amounts are minor units of (`USD`), when it counts a
        money argument of its tool; None for a plain number."""
        found = self.tool(tool)
        return envelopes.currency_of(found.display if found else None, amount)

    def money_arg(self, tool: str) -> str | None:
        """What a call of `tool` counts against an envelope's amount by default."""
        found = self.tool(tool)
        return self._money_arg(found) if found else None

    @staticmethod
    def _money_arg(tool: Tool) -> str | None:
        """The argument a call's amount is in, by default: the tool's first money argument."""
        display = tool.display
        money = [name for name in display.money] if display else []
        return f"args.{money[0]}" if money else None


def _facts(run: Run | None, now: datetime) -> Facts:
    return facts_of(run, None, now)


def _days(length: timedelta) -> str:
    hours = length.total_seconds() / 3600
    return f"{hours / 24:g} days" if hours >= 24 else f"{hours:g} hours"
