"""Approval rules as every surface lists them (CLI, console, `/runs rules`): the file's rules
and the learned ones together, as plain rows; and a backtest in words. Pure functions."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from runtime.approvals import Backtest
from runtime.approvals import Policies
from runtime.approvals import learned_rule_fields
from runtime.records import LearnedRule


def file_rules(policies: Policies) -> list[dict[str, Any]]:
    """The rules of signoff.toml, in the order they are evaluated per policy."""
    named = [("default", policies.default)] + [
        (tool, p) for tool, p in policies.tools.items() if "rules" in p.model_fields_set
    ]
    return [
        {
            "source": "file",
            "id": f"{name}#{number}",
            "tool": name,
            "when": rule.when,
            "action": rule.action,
            "label": rule.describe(),
        }
        for name, policy in named
        for number, rule in enumerate(policy.rules, start=1)
    ]


def learned_row(rule: LearnedRule, now: datetime) -> dict[str, Any]:
    row = {
        "source": "learned",
        "id": rule.id,
        "tool": rule.tool,
        "when": rule.condition,
        "action": "auto_approve",
        "label": rule.reason,
    }
    fields = learned_rule_fields(rule, now)
    del fields["from_approval"]
    return row | fields


def all_rules(
    policies: Policies, learned: Iterable[LearnedRule], now: datetime
) -> list[dict[str, Any]]:
    return file_rules(policies) + [learned_row(rule, now) for rule in learned]


def rule_line(row: dict[str, Any]) -> str:
    if row["source"] == "file":
        return f"{row['id']}  [file]  {row['action']}  {row['when']}"
    return (
        f"{row['id']}  [{row['status']}]  {row['tool']}  {row['when']}  — {row['reason']} "
        f"(by {row['author']}, expires {row['expires']}, used {row['uses']}x)"
    )


def backtest_lines(tested: Backtest) -> list[str]:
    """What the rule would have done, in words; each declined or edited request named."""
    lines = [backtest_summary(tested)]
    for label, hits in (("declined", tested.declined), ("edited", tested.edited)):
        if hits:
            lines.append(f"{len(hits)} of those a person {label}:")
            lines += [
                f"  {h.approval_id} (run {h.run_id or '-'}) by {h.decided_by}"
                + (f": {h.reason}" if h.reason else "")
                for h in hits
            ]
    return lines + backtest_notes(tested)


def backtest_summary(tested: Backtest) -> str:
    return (
        f"of the last {tested.considered} requests for {tested.tool}, the rule would have "
        f"approved {tested.would_approve} at once"
    )


def backtest_notes(tested: Backtest) -> list[str]:
    """What else a backtest found: matches the ceiling stops, requests it could not judge."""
    notes = []
    if tested.ceiling_blocked:
        notes.append(f"{tested.ceiling_blocked} more held but are above the tool's ceiling")
    if tested.errors:
        notes.append(f"{tested.errors} could not be evaluated ({tested.error})")
    return notes
