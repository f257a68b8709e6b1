"""Learned rules' rows and write bodies (the `learned_rules` table, migration 0012), kept
apart from `store.core` so the safety-critical writes stay in one place of their own.

Each write that changes a rule is a compare-and-set with its audit event in one transaction:
a rule is confirmed once, revoked once, and its author reminded once. The reminder and the
batched note of a rule's uses are outbox rows written with their marks (the sender delivers
them with backoff)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from store import rows
from store.core import Body
from store.core import Stmt
from store.core import changed_with_event
from store.core import insert_event
from store.records import AuditEvent
from store.records import LearnedRule

Row = Mapping[str, Any]


_RULE = rows.Columns(
    LearnedRule,
    (
        "id",
        "tool",
        "condition",
        "author",
        "reason",
        "state",
        "from_approval",
        "confirmed_by",
        "revoked_by",
        "uses",
    ),
    times=("created_at", "expires_at", "confirmed_at", "revoked_at", "reminded_at", "noted_until"),
    flags=("needs_second",),
    unwritten=frozenset(
        {
            "confirmed_by",
            "confirmed_at",
            "revoked_by",
            "revoked_at",
            "reminded_at",
            "noted_until",
            "uses",
        }
    ),
)
"""A rule's row; its later compare-and-sets fill who confirmed or revoked it and when, and
its reminder and note marks; `uses` is counted when it is read."""
rule_params, rule_from_row = _RULE.params, _RULE.read


def create(rule: LearnedRule, event: AuditEvent) -> Body[None]:
    yield Stmt("insert_learned_rule", rule_params(rule))
    yield from insert_event(event)


def confirm(params: dict[str, Any], event: AuditEvent) -> Body[bool]:
    return (yield from changed_with_event(Stmt("confirm_learned_rule", params, "count"), event))


def revoke(params: dict[str, Any], event: AuditEvent) -> Body[bool]:
    return (yield from changed_with_event(Stmt("revoke_learned_rule", params, "count"), event))


def mark_noted(params: dict[str, Any], detail: str) -> Body[bool]:
    """Move the note's mark on and, when it moved, queue the note in the same transaction."""
    if (yield Stmt("mark_learned_rule_noted", params, "count")) != 1:
        return False
    queued = {"id": params["id"], "detail": detail, "test_now": params["test_now"]}
    yield Stmt("enqueue_rule_uses_noted", queued)
    return True


def mark_reminded(params: dict[str, Any]) -> Body[bool]:
    """Mark the author reminded and, when this did, queue the DM in the same transaction."""
    if (yield Stmt("mark_learned_rule_reminded", params, "count")) != 1:
        return False
    queued = {"id": params["id"], "detail": "{}", "test_now": params["test_now"]}
    yield Stmt("enqueue_rule_expiring", queued)
    return True


def request_from_row(row: Row) -> dict[str, Any]:
    return {
        "id": row["id"],
        "at": rows.dt(row["at"]),
        "actor": row["actor"],
        "action": row["action"],
        "run_id": row["run_id"],
        "approval_id": row["approval_id"],
        "detail": rows.maybe_loads(row["detail"]),
        "decision": row["decision"],
        "decided_by": row["decided_by"],
        "decision_detail": rows.maybe_loads(row["decision_detail"]),
    }
