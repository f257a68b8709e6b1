"""What a new approval becomes once its limits' windows are read, decided inside the
transaction that creates it (`store.spend.admit` calls `Admitting.decide` under the lock of
each limit's key), so the decision and the amounts it holds are one atomic step.

- Within every limit it is made as its rules made it, and holds its amount on each (an
  approval still waiting for a person holds it too, so two waiting calls can never both be
  approved past a limit); if it waits for a person, an envelope in force may approve it.
- Past an enforced limit that denies, it is declined at once with the limit's reason; past
  one that asks, it waits for the limit's policy (the most restrictive, past several) and
  holds nothing until a person approves it.
- A limit whose key or amount could not be worked out asks, never lets the call through.
- A limit in shadow mode decides nothing: it holds like any other, and what it would have
  done is noted on the approval and in an audit event.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from runtime.approvals import Policies
from runtime.approvals import Policy
from runtime.approvals import Route
from runtime.approvals import asks_text
from runtime.approvals import policy_snapshot
from runtime.approvals import restrictiveness
from runtime.spend import words
from runtime.spend.config import LimitConfig
from store import Approval
from store import ApprovalState
from store.records import LimitState
from store.records import RuleMatch
from store.records import ShadowNote
from store.spend import Admission
from store.spend import EnvelopeTry

Redraft = Callable[[Approval, str, Route], Approval]


@dataclass(frozen=True, slots=True)
class Admitting:
    """One new approval's admission. `reroute`: the approval routed again with the limits'
    values (when its rules read them); `envelopes`: those whose condition holds for the
    call, oldest first, with the call's amount on each; `by_envelope`: the approval as an
    envelope approves it."""

    approval: Approval
    limits: Mapping[str, LimitConfig]
    policies: Policies
    redraft: Redraft
    reroute: Callable[[Mapping[str, Mapping[str, int]]], Approval] | None = None
    envelopes: tuple[EnvelopeTry, ...] = ()
    by_envelope: Callable[[Approval, EnvelopeTry], Approval] | None = None
    envelope_eligible: Callable[[Approval], bool] = lambda approval: False

    def decide(self, states: tuple[LimitState, ...]) -> Admission:
        approval = self.approval
        if self.reroute is not None:
            approval = self.reroute(values(states))
        stopping = [s for s in states if _stops(s)]
        notes = [self._note(s) for s in stopping if s.mode == "shadow"]
        enforced = [s for s in stopping if s.mode == "enforce"]
        if approval.state == ApprovalState.DECLINED:  # a rule declined it: nothing to hold
            approval = _with(approval, states, held=False, notes=notes)
        elif enforced:
            approval = self._stopped(approval, states, enforced, notes)
        else:
            approval = _with(approval, states, held=True, notes=notes)
        if approval.state != ApprovalState.PENDING or enforced:
            return Admission(approval)
        if not self.envelopes or not self.envelope_eligible(approval):
            return Admission(approval)
        return Admission(approval, self.envelopes, self.by_envelope)

    def _note(self, state: LimitState) -> ShadowNote:
        would: Literal["ask", "deny"] = (
            "deny" if state.outcome != "error" and state.over == "deny" else "ask"
        )
        return ShadowNote(kind="limit", name=state.name, would=would, text=self._line(state))

    def _line(self, state: LimitState) -> str:
        return words.line(state, self.approval.tool)

    def _stopped(
        self,
        approval: Approval,
        states: Sequence[LimitState],
        enforced: Sequence[LimitState],
        notes: list[ShadowNote],
    ) -> Approval:
        """Past a limit (or not counted): declined at once, or asked under the strictest
        policy of the limits that ask."""
        denies = [s for s in enforced if s.outcome != "error" and s.over == "deny"]
        if denies:
            first = denies[0]
            reason = self.limits[first.name].deny or "past its limit"
            policy = self.policies.for_tool(approval.policy)[1]
            outcome = f"declined at once: {reason}"
            match = self._match(approval, first, policy, notes, states, outcome, deny=reason)
            return self.redraft(approval, approval.policy, Route(policy, match))
        name, policy, decider = self._strictest(approval, enforced)
        outcome = asks_text(policy.model_copy(update={"rules": ()}))
        match = self._match(approval, decider, policy, notes, states, outcome)
        return self.redraft(approval, name, Route(policy, match))

    def _strictest(
        self, approval: Approval, enforced: Sequence[LimitState]
    ) -> tuple[str, Policy, LimitState]:
        """The strictest policy among those of the limits that stop the call (a denying
        limit that could not be counted asks under the call's own policy)."""
        candidates = []
        for state in enforced:
            name, policy = self.policies.for_tool(self.limits[state.name].ask or approval.policy)
            candidates.append((name, policy, state))
        return max(candidates, key=lambda c: restrictiveness(c[1]))

    def _match(
        self,
        approval: Approval,
        decider: LimitState,
        policy: Policy,
        notes: list[ShadowNote],
        states: Sequence[LimitState],
        outcome: str,
        *,
        deny: str | None = None,
    ) -> RuleMatch:
        """The match of a call a limit stopped: the rule it came under, the limit and why."""
        bare = policy.model_copy(update={"rules": ()})
        before = approval.rule
        summary = f"limit {decider.name}: {self._line(decider)} → {outcome}"
        return RuleMatch(
            kind=before.kind if before else "no_match",
            number=before.number if before else None,
            when=before.when if before else None,
            label=before.label if before else None,
            action="deny" if deny else "ask",
            deny=deny,
            summary=summary,
            policy=policy_snapshot(bare),
            limits=tuple(_outcome(s, held=False) for s in states),
            limit=decider.name,
            shadow=(*(before.shadow if before else ()), *notes),
        )


def values(states: Sequence[LimitState]) -> dict[str, dict[str, int]]:
    """What rules see of each limit counted (`used` and `left` after this call)."""
    return {
        s.name: {"used": s.after, "left": s.left, "max": s.max}
        for s in states
        if s.outcome != "error"
    }


def _stops(state: LimitState) -> bool:
    return state.outcome == "error" or state.after > state.max


def _outcome(state: LimitState, *, held: bool) -> LimitState:
    outcome = "error" if state.outcome == "error" else "over" if _stops(state) else "within"
    return state.model_copy(update={"outcome": outcome, "held": held and state.key is not None})


def _with(
    approval: Approval, states: Sequence[LimitState], *, held: bool, notes: list[ShadowNote]
) -> Approval:
    """The approval as its rules made it, with its limits (held or not) on its match."""
    limits = tuple(_outcome(s, held=held) for s in states)
    match = approval.rule or RuleMatch(
        kind="no_match", action="ask", summary=f"policy {approval.policy}"
    )
    match = match.model_copy(update={"limits": limits, "shadow": (*match.shadow, *notes)})
    return approval.model_copy(update={"rule": match})
