"""Which policy a call is asked under: the tool's rules in order, the first that holds wins.

The outcome says what happens (ask, approve at once, decline at once), under which policy,
and why, in words every surface shows ("rule 3: amount over $200 → 2 approvals from
S0FINANCELEADS"). A condition that fails while it runs never approves: the call is asked of
the most restrictive policy among the tool's, and the outcome says which rule failed.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from datetime import timedelta
from typing import TYPE_CHECKING
from typing import Any
from typing import Literal

from runtime import errors
from runtime.approvals.policy import SYSTEM_ACTOR
from runtime.approvals.policy import Policies
from runtime.approvals.policy import Policy
from runtime.approvals.policy import under
from runtime.approvals.rules import Facts
from runtime.approvals.rules import Rule
from runtime.approvals.rules import RuleEvaluationError
from runtime.approvals.rules import activation
from runtime.approvals.rules import holds
from runtime.errors import Loc
from runtime.tools import Tool
from store import Approval
from store import ApprovalState
from store.records import RuleMatch
from store.records import ShadowNote

if TYPE_CHECKING:
    from runtime.agent import Agent
    from runtime.approvals.rule_check import CelType


@dataclass(frozen=True, slots=True)
class Route:
    """What a call's rules decided: the policy it is asked under and the record of why."""

    policy: Policy
    match: RuleMatch | None

    @property
    def action(self) -> str:
        return self.match.action if self.match else "ask"


def route(
    policy_name: str, policy: Policy, tool: str, args: Mapping[str, Any], facts: Facts
) -> Route:
    """Evaluate `policy`'s rules for one call; without rules, the policy as it is. A rule in
    shadow mode decides nothing: what it would have done is noted on the match."""
    if not policy.rules:
        return Route(policy, None)
    context = activation(tool, args, facts)
    shadow: list[ShadowNote] = []
    for number, rule in enumerate(policy.rules, start=1):
        try:
            matched = holds(rule.when, context)
        except RuleEvaluationError as exc:
            if rule.mode == "shadow":
                shadow.append(_shadow(number, "ask", f"could not be evaluated ({exc})"))
                continue
            return _noted(_fail_closed(policy_name, policy, number, rule, str(exc)), shadow)
        if matched and rule.mode == "shadow":
            would = _matched(policy, number, rule).match
            action = _WOULD[rule.action]
            shadow.append(_shadow(number, action, would.summary if would else rule.describe()))
        elif matched:
            return _noted(_matched(policy, number, rule), shadow)
    base = _bare(policy)
    match = RuleMatch(
        kind="no_match",
        action="ask",
        summary=f"no rule matched → policy {policy_name}: {asks_text(base)}",
        policy=snapshot(base),
    )
    return _noted(Route(base, match), shadow)


def unasked(policy: Policy) -> Route:
    """A call of a tool that needs no approval, gated only by its limits: approved at once
    while it is within them (its rules are not used)."""
    base = _bare(policy)
    match = RuleMatch(
        kind="no_match",
        action="auto_approve",
        summary="needs no approval → approved at once, within its limits",
        policy=snapshot(base),
    )
    return Route(base, match)


_WOULD: dict[str, Literal["approve", "ask", "deny"]] = {
    "auto_approve": "approve",
    "deny": "deny",
    "ask": "ask",
}


def _shadow(number: int, would: Literal["approve", "ask", "deny"], text: str) -> ShadowNote:
    return ShadowNote(kind="rule", name=f"rule {number}", would=would, text=text)


def _noted(routed: Route, shadow: list[ShadowNote]) -> Route:
    if not shadow or routed.match is None:
        return routed
    return Route(routed.policy, routed.match.model_copy(update={"shadow": tuple(shadow)}))


def _matched(policy: Policy, number: int, rule: Rule) -> Route:
    effective = under(policy, rule) if rule.asks else _bare(policy)
    outcome = {
        "auto_approve": "approved at once",
        "deny": f"declined at once: {rule.deny}",
        "ask": asks_text(effective),
    }[rule.action]
    match = RuleMatch(
        kind="matched",
        number=number,
        when=rule.when,
        label=rule.describe(),
        action=rule.action,
        deny=rule.deny,
        summary=f"rule {number}: {rule.describe()} → {outcome}",
        policy=snapshot(effective),
    )
    return Route(effective, match)


def _fail_closed(name: str, policy: Policy, number: int, rule: Rule, error: str) -> Route:
    """Ask the most restrictive of the policies the rules could have chosen."""
    candidates = [(f"policy {name}", _bare(policy))] + [
        (f"rule {n}", under(policy, r)) for n, r in enumerate(policy.rules, start=1) if r.asks
    ]
    chosen_name, chosen = max(candidates, key=lambda c: restrictiveness(c[1]))
    match = RuleMatch(
        kind="error",
        number=number,
        when=rule.when,
        label=rule.describe(),
        action="ask",
        error=error,
        summary=(
            f"rule {number} could not be evaluated ({error}) → the most restrictive policy, "
            f"{chosen_name}: {asks_text(chosen)}"
        ),
        policy=snapshot(chosen),
    )
    return Route(chosen, match)


def restrictiveness(policy: Policy) -> tuple[int, int, int, int]:
    """More approvals first; then named approvers over anyone, no self-approval, no edits."""
    return (
        policy.required_approvals,
        int(bool(policy.approvers)),
        int(not policy.allow_self_approval),
        int(not policy.allow_edit),
    )


def asks_text(policy: Policy) -> str:
    """Who is asked and where: "2 approvals from S0LEADS in C0REFUNDS"."""
    who = ", ".join(policy.approvers) if policy.approvers else "anyone but the requester"
    count = policy.required_approvals
    where = f" in {policy.channel}" if policy.channel else ""
    return f"{count} approval{'s' if count > 1 else ''} from {who}{where}"


def _bare(policy: Policy) -> Policy:
    return policy.model_copy(update={"rules": ()})


def snapshot(policy: Policy) -> dict[str, Any]:
    """The policy as JSON; durations in seconds, which `Policy` reads back as such."""
    # display and start-up checking only
    values = policy.model_dump(exclude={"rules", "sensitive_results", "external"})
    for later in ("step_up", "cool_off", "undo_for"):  # as recorded before each existed
        if values.get(later) is None:
            values.pop(later, None)
    return {
        key: value.total_seconds() if isinstance(value, timedelta) else value
        for key, value in values.items()
    }


def decided_at_once(approval: Approval, now: datetime) -> Approval:
    """The approval as its rule left it: approved or declined when made, or still pending."""
    match = approval.rule
    if match is None or match.action == "ask":
        return approval
    approved = match.action == "auto_approve"
    return approval.model_copy(
        update={
            "state": ApprovalState.APPROVED if approved else ApprovalState.DECLINED,
            "decided_by": SYSTEM_ACTOR,
            "decided_at": now,
            "reason": match.summary if approved else match.deny,
            "deadline": None,
            "next_reminder_at": None,
            "approved_digest": approval.args_digest if approved else None,
        }
    )


# checking at start-up


def check_rules(
    policies: Policies,
    agents: Iterable[Agent],
    limits: Mapping[str, Iterable[str]] | None = None,
) -> None:
    """Refuse rules that name an argument a tool lacks, a limit that does not count its
    calls, or compare a field with a value of another type, before any call is routed by
    them. `limits`: each limit's name and the tools it counts."""
    if not any(p.rules for p in [policies.default, *policies.tools.values()]):
        return  # nothing to check: cel-python and the checker stay unloaded
    tools = {name: t for agent in agents for name, t in agent.tools.items()}
    types = {name: tool_arg_types(t) for name, t in tools.items() if t.requires_approval}
    problems = rule_problems(policies, types, limits)
    if problems:
        raise errors.RuleError.of(problems)


def rule_problems(
    policies: Policies,
    tools: Mapping[str, Mapping[str, CelType]],
    limits: Mapping[str, Iterable[str]] | None = None,
) -> list[tuple[Loc, str]]:
    """Every rule's problems for the tools it applies to (`tools`: argument types by tool
    name; `limits`: the tools each limit counts), each with where the rule's `when` is."""
    found: list[tuple[Loc, str]] = []
    counted = {name: set(counts) for name, counts in (limits or {}).items()}
    own = {name for name, p in policies.tools.items() if "rules" in p.model_fields_set}
    for name in own:
        args = tools.get(name)
        named = [limit for limit, counts in counted.items() if name in counts]
        found += _problems(("policies", "tools", name), name, policies.tools[name], args, named)
    inheriting = [t for t in tools if t not in own]
    args = _union(tools[t] for t in inheriting) if inheriting else None
    named = [limit for limit, counts in counted.items() if counts & set(inheriting)]
    found += _problems(("policies", "default"), "the tools", policies.default, args, named)
    return found


def _problems(
    loc: Loc,
    tool: str,
    policy: Policy,
    args: Mapping[str, CelType] | None,
    limits: list[str],
) -> list[tuple[Loc, str]]:
    from runtime.approvals.rule_check import check

    return [
        ((*loc, "rules", str(index), "when"), f"rule {index + 1}: {problem}")
        for index, rule in enumerate(policy.rules)
        for problem in check(rule.when, tool, args, limits)
    ]


def reads_limits(policy: Policy) -> bool:
    """Whether a rule of the policy reads the limits (`limits.<name>.used`)."""
    return any("limits" in rule.when for rule in policy.rules)


def _union(each: Iterable[Mapping[str, CelType]]) -> dict[str, CelType]:
    """Arguments of several tools; a name typed differently by two of them is of any type."""
    union: dict[str, CelType] = {}
    for args in each:
        for name, cel_type in args.items():
            union[name] = cel_type if union.get(name, cel_type) == cel_type else ""
    return union


def tool_arg_types(tool: Tool) -> dict[str, CelType]:
    from runtime.approvals.rule_check import arg_types

    fields = tool.args_model.model_fields
    return arg_types({name: info.annotation for name, info in fields.items()})
