"""An approval's authority: who decides it and how, recorded when it is asked, so that every
decision, by any process and through any door, is judged by the same record
(docs/architecture.md, "Authority").

The record names the policy, the rule that chose its settings, the settings themselves
(approvers, people and user groups; quorum; self-approval; edits; timeout, reminders,
escalation), their digest and the configuration digest of the process that asked. User
groups are resolved when someone decides (`runtime.approvals.policy.may_decide`).

Approvals asked before approvals carried their authority get it filled in, once, from the
policy in force in the first process that opens the database with its policies (`fill`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from runtime.approvals.policy import SYSTEM_ACTOR
from runtime.approvals.policy import Policies
from runtime.approvals.policy import Policy
from runtime.approvals.routing import Route
from runtime.approvals.routing import snapshot
from store import Approval
from store import AuditEvent
from store import Store
from store.records import Authority
from store.records import RuleMatch

log = logging.getLogger("signoff.approvals")

FILL_BATCH = 500


def asked(name: str, routed: Route, config_digest: str | None) -> Authority:
    """The authority of an approval asked now under policy `name`, as its rules routed it."""
    return Authority.of(
        name,
        snapshot(routed.policy),
        rule=_rule_name(routed.match),
        config_digest=config_digest,
    )


def _rule_name(match: RuleMatch | None) -> str | None:
    if match is not None and match.limit is not None:
        return f"limit {match.limit}"  # past it, or not counted: the limit chose the policy
    if match is None or match.number is None:
        return None
    if match.learned_id is not None:
        return f"learned rule {match.learned_id}"
    if match.kind == "error":
        return f"rule {match.number} failed: the most restrictive policy"
    return f"rule {match.number}: {match.label}"


def policy_of(approval: Approval, policies: Policies) -> Policy:
    """The policy an approval is decided under: its recorded authority; for one asked before
    approvals carried it, its rule's choice, else its tool's policy in force."""
    if approval.authority is not None:
        return Policy.model_validate(approval.authority.settings)
    match = approval.rule
    if match is not None and match.policy:
        return Policy.model_validate(match.policy)
    return policies.for_tool(approval.policy)[1]


def recorded(approval: Approval, policies: Policies, config_digest: str | None) -> Authority:
    """The authority an approval has, or the one it would be filled in with now."""
    if approval.authority is not None:
        return approval.authority
    rule = approval.rule
    return Authority.of(
        approval.policy,
        snapshot(policy_of(approval, policies)),
        rule=_rule_name(rule) if rule and rule.policy else None,
        config_digest=config_digest,
        filled=True,
    )


async def fill(store: Store, policies: Policies, config_digest: str | None, now: datetime) -> int:
    """Fill in the authority of every pending approval asked before approvals carried it,
    from the policy in force here; each once (of two processes filling one approval at
    once, the first one's stands for both), audited as `authority_filled`. How many this
    call filled."""
    filled = 0
    while True:
        missing = await store.approvals_without_authority(limit=FILL_BATCH)
        for approval in missing:
            filled += await fill_one(store, approval, policies, config_digest, now) is not None
        if len(missing) < FILL_BATCH:
            break
    if filled:
        log.info(
            "filled in the authority of %d pending approval(s) asked before approvals "
            "carried it, from the policy in force here (configuration %s)",
            filled,
            config_digest or "unnamed",
        )
    return filled


async def fill_one(
    store: Store,
    approval: Approval,
    policies: Policies,
    config_digest: str | None,
    now: datetime,
) -> Approval | None:
    """The approval with the authority this process filled in; None when it had one, or
    another process filled it first (read it again)."""
    authority = recorded(approval, policies, config_digest)
    event = AuditEvent(
        action="authority_filled",
        actor=SYSTEM_ACTOR,
        run_id=approval.run_id,
        approval_id=approval.id,
        detail={"policy": authority.policy, "digest": authority.digest},
        at=now,
    )
    if not await store.fill_authority(approval.id, authority, event=event):
        return None
    return approval.model_copy(update={"authority": authority})


def view(approval: Approval) -> dict[str, Any] | None:
    """Who may decide an approval, as every surface shows it: the people and the user groups
    asked, how many must agree, whether the requester may approve, edits, the deadline and
    what happens then, reminders and escalation, and where the record came from. None for
    an approval asked before approvals carried their authority and never filled in."""
    authority = approval.authority
    if authority is None:
        return None
    policy = Policy.model_validate(authority.settings)
    people, groups = _split(policy.approvers)
    return {
        "policy": authority.policy,
        "rule": authority.rule,
        "approvers": people,
        "groups": groups,
        "anyone": not policy.approvers,
        "required_approvals": policy.required_approvals,
        "allow_self_approval": policy.allow_self_approval,
        "allow_edit": policy.allow_edit,
        "deadline": approval.deadline.isoformat() if approval.deadline else None,
        "on_timeout": policy.on_timeout,
        "remind_every": _seconds(policy.remind_every),
        "max_reminders": policy.max_reminders,
        "escalate_to": policy.escalate_to,
        "escalated": approval.escalated,
        "digest": authority.digest,
        "config_digest": authority.config_digest,
        "filled": authority.filled,
    }


def _split(ids: Iterable[str]) -> tuple[list[str], list[str]]:
    ids = list(ids)
    groups = [i for i in ids if i.startswith("S")]
    return [i for i in ids if i not in groups], groups


def _seconds(value: Any) -> float | None:
    return None if value is None else float(value.total_seconds())
