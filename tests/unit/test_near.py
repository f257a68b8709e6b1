"""Did you mean: which names count as a typo of a known one (and so stop start-up), which
only earn a hint, and that `external` (a checking flag) changes no digest."""

from __future__ import annotations

import pytest

from bot.config_digest import config_digest
from bot.near import HINT
from bot.near import did_you_mean
from bot.near import keys_at
from bot.near import near
from bot.settings import Settings

TOOLS = ["delete_customer", "find_customer", "issue_refund", "reverse_refund", "send"]


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("delete_custmer", "delete_customer"),  # a letter dropped
        ("delete_customerr", "delete_customer"),  # doubled
        ("sned", "send"),  # swapped
        ("refund", None),  # shares a word only
        ("wire_transfer", None),
    ],
)
def test_a_typo_is_a_letter_off_not_a_shared_word(typed: str, meant: str | None) -> None:
    assert near(typed, TOOLS) == meant


def test_a_name_is_never_a_typo_of_itself() -> None:
    assert near("send", TOOLS) is None


def test_hints_reach_further_than_typos() -> None:
    assert near("policy", ["policies"]) is None
    assert near("policy", ["policies"], cutoff=HINT) == "policies"
    assert did_you_mean("policy", ["policies", "limits"]) == "; did you mean `policies`?"
    assert did_you_mean("zzz", ["policies"]) == ""


def test_the_keys_a_table_may_hold_follow_the_settings_models() -> None:
    policy = keys_at(Settings, ("runtime", "policies", "tools", "issue_refund"))
    assert {"approvers", "external", "rules", "required_approvals"} <= set(policy)
    rule = keys_at(Settings, ("runtime", "policies", "tools", "x", "rules", "0"))
    assert {"when", "auto_approve", "approvers"} <= set(rule)
    assert "approvals_channel" in keys_at(Settings, ("slack",))
    assert keys_at(Settings, ("runtime", "prices", "gpt")) != []
    assert keys_at(Settings, ("web", "people")) == []  # a free-form table


def test_external_changes_no_digest() -> None:
    plain = Settings(policies={"tools": {"wire": {"approvers": ["U0BOB"]}}})
    marked = Settings(policies={"tools": {"wire": {"approvers": ["U0BOB"], "external": True}}})
    assert config_digest(plain) == config_digest(marked)
    other = Settings(policies={"tools": {"wire": {"approvers": ["U0ANN"]}}})
    assert config_digest(plain) != config_digest(other)


def test_the_default_policy_is_never_external() -> None:
    with pytest.raises(ValueError, match="only a tool's policy is external"):
        Settings(policies={"default": {"external": True}})
