"""Asking people: the approval desk, policies and their rules (written and learned), routing a
call to its policy, binding what was approved to what runs, timers, pages and decision targets.

`__all__` names what the other packages may import (the loop, rollback, the surfaces): each
name loads its module on first use (`runtime.exports.lazy`), so importing one of them loads
none of the rest (the CLI's reads stay free of CEL). A module path is private to the package;
the desk itself is asked through `runtime.ports`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from runtime.exports import lazy

if TYPE_CHECKING:
    from runtime.approvals.authority import policy_of
    from runtime.approvals.binding import Bound
    from runtime.approvals.binding import CallTrail
    from runtime.approvals.binding import Unbound
    from runtime.approvals.binding import bind
    from runtime.approvals.binding import call_trail
    from runtime.approvals.binding import conflict_of
    from runtime.approvals.binding import conflict_text
    from runtime.approvals.binding import differences
    from runtime.approvals.binding import said
    from runtime.approvals.context import Context as CallContext
    from runtime.approvals.context import changes as context_changes
    from runtime.approvals.context import gather as gather_context
    from runtime.approvals.context import stated_reason
    from runtime.approvals.deciding import Decision
    from runtime.approvals.delegation import principal as delegated_for
    from runtime.approvals.desk import ApprovalDesk
    from runtime.approvals.drafting import facts_of
    from runtime.approvals.learned_rules import Backtest
    from runtime.approvals.learned_rules import Draft
    from runtime.approvals.learned_rules import Hit
    from runtime.approvals.learned_rules import LearnedRulesConfig
    from runtime.approvals.learned_rules import NeedsConfirmation
    from runtime.approvals.learned_rules import RuleNotFound
    from runtime.approvals.learned_rules import as_toml as learned_rules_toml
    from runtime.approvals.learned_rules import fields as learned_rule_fields
    from runtime.approvals.naming import log_rule_decision
    from runtime.approvals.naming import overdue
    from runtime.approvals.paging import announce_new as announce_pages
    from runtime.approvals.paging import new_page
    from runtime.approvals.paging import page as post_page
    from runtime.approvals.policy import SYSTEM_ACTOR
    from runtime.approvals.policy import Directory
    from runtime.approvals.policy import Policies
    from runtime.approvals.policy import Policy
    from runtime.approvals.policy import StaticDirectory
    from runtime.approvals.policy import approved_at_once
    from runtime.approvals.policy import may_decide
    from runtime.approvals.policy import open_policies
    from runtime.approvals.policy_types import Duration
    from runtime.approvals.policy_types import PositiveDuration
    from runtime.approvals.policy_types import parse_duration
    from runtime.approvals.receipts import ensure as ensure_receipt
    from runtime.approvals.routing import Route
    from runtime.approvals.routing import asks_text
    from runtime.approvals.routing import check_rules
    from runtime.approvals.routing import restrictiveness
    from runtime.approvals.routing import route
    from runtime.approvals.routing import snapshot as policy_snapshot
    from runtime.approvals.routing import tool_arg_types
    from runtime.approvals.rule_check import check as check_rule
    from runtime.approvals.rules import Facts
    from runtime.approvals.rules import Rule
    from runtime.approvals.rules import RuleEvaluationError
    from runtime.approvals.rules import RuleSyntaxError
    from runtime.approvals.rules import activation as rule_activation
    from runtime.approvals.rules import holds as rule_holds
    from runtime.approvals.rules import program as rule_program
    from runtime.approvals.slo import duration_text
    from runtime.approvals.slo import missed as slo_missed

__all__ = [
    "SYSTEM_ACTOR",
    "ApprovalDesk",
    "Backtest",
    "Bound",
    "CallContext",
    "CallTrail",
    "Decision",
    "Directory",
    "Draft",
    "Duration",
    "Facts",
    "Hit",
    "LearnedRulesConfig",
    "NeedsConfirmation",
    "Policies",
    "Policy",
    "PositiveDuration",
    "Route",
    "Rule",
    "RuleEvaluationError",
    "RuleNotFound",
    "RuleSyntaxError",
    "StaticDirectory",
    "Unbound",
    "announce_pages",
    "approved_at_once",
    "asks_text",
    "bind",
    "call_trail",
    "check_rule",
    "check_rules",
    "conflict_of",
    "conflict_text",
    "context_changes",
    "delegated_for",
    "differences",
    "duration_text",
    "ensure_receipt",
    "facts_of",
    "gather_context",
    "learned_rule_fields",
    "learned_rules_toml",
    "log_rule_decision",
    "may_decide",
    "new_page",
    "open_policies",
    "overdue",
    "parse_duration",
    "policy_of",
    "policy_snapshot",
    "post_page",
    "restrictiveness",
    "route",
    "rule_activation",
    "rule_holds",
    "rule_program",
    "said",
    "slo_missed",
    "stated_reason",
    "tool_arg_types",
]

_HOME = {
    "announce_pages": "runtime.approvals.paging:announce_new",
    "ApprovalDesk": "runtime.approvals.desk",
    "asks_text": "runtime.approvals.routing",
    "Backtest": "runtime.approvals.learned_rules",
    "bind": "runtime.approvals.binding",
    "Bound": "runtime.approvals.binding",
    "call_trail": "runtime.approvals.binding",
    "CallContext": "runtime.approvals.context:Context",
    "CallTrail": "runtime.approvals.binding",
    "check_rule": "runtime.approvals.rule_check:check",
    "check_rules": "runtime.approvals.routing",
    "conflict_of": "runtime.approvals.binding",
    "conflict_text": "runtime.approvals.binding",
    "context_changes": "runtime.approvals.context:changes",
    "Decision": "runtime.approvals.deciding",
    "delegated_for": "runtime.approvals.delegation:principal",
    "differences": "runtime.approvals.binding",
    "Directory": "runtime.approvals.policy",
    "Draft": "runtime.approvals.learned_rules",
    "Duration": "runtime.approvals.policy_types",
    "duration_text": "runtime.approvals.slo",
    "ensure_receipt": "runtime.approvals.receipts:ensure",
    "Facts": "runtime.approvals.rules",
    "facts_of": "runtime.approvals.drafting",
    "gather_context": "runtime.approvals.context:gather",
    "Hit": "runtime.approvals.learned_rules",
    "learned_rules_toml": "runtime.approvals.learned_rules:as_toml",
    "LearnedRulesConfig": "runtime.approvals.learned_rules",
    "log_rule_decision": "runtime.approvals.naming",
    "may_decide": "runtime.approvals.policy",
    "NeedsConfirmation": "runtime.approvals.learned_rules",
    "new_page": "runtime.approvals.paging",
    "open_policies": "runtime.approvals.policy",
    "overdue": "runtime.approvals.naming",
    "parse_duration": "runtime.approvals.policy_types",
    "Policies": "runtime.approvals.policy",
    "Policy": "runtime.approvals.policy",
    "policy_of": "runtime.approvals.authority",
    "policy_snapshot": "runtime.approvals.routing:snapshot",
    "PositiveDuration": "runtime.approvals.policy_types",
    "post_page": "runtime.approvals.paging:page",
    "restrictiveness": "runtime.approvals.routing",
    "Route": "runtime.approvals.routing",
    "route": "runtime.approvals.routing",
    "Rule": "runtime.approvals.rules",
    "rule_activation": "runtime.approvals.rules:activation",
    "rule_holds": "runtime.approvals.rules:holds",
    "rule_program": "runtime.approvals.rules:program",
    "RuleEvaluationError": "runtime.approvals.rules",
    "RuleNotFound": "runtime.approvals.learned_rules",
    "RuleSyntaxError": "runtime.approvals.rules",
    "said": "runtime.approvals.binding",
    "slo_missed": "runtime.approvals.slo:missed",
    "stated_reason": "runtime.approvals.context",
    "StaticDirectory": "runtime.approvals.policy",
    "SYSTEM_ACTOR": "runtime.approvals.policy",
    "learned_rule_fields": "runtime.approvals.learned_rules:fields",
    "approved_at_once": "runtime.approvals.policy",
    "tool_arg_types": "runtime.approvals.routing",
    "Unbound": "runtime.approvals.binding",
}

__getattr__, __dir__ = lazy(__name__, _HOME)
