"""Approver ids: the runtime asks for one word; the bot, whose directory is Slack, asks for
Slack's formats, on policies from a file and on policies built in code alike."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bot.policy_ids import SlackPolicies
from runtime import Policies
from runtime import Policy


def test_the_runtime_takes_any_one_word_id() -> None:
    assert Policy(approvers=("alice@example.com", "U0BOSS")).approvers[0] == "alice@example.com"
    with pytest.raises(ValidationError, match="not an approver id"):
        Policy(approvers=("alice smith",))


def test_the_bot_takes_slack_ids_only() -> None:
    loaded = SlackPolicies.model_validate(
        {"tools": {"charge": {"approvers": ["U0BOSS", "S0FINANCE"], "rules": []}}}
    )
    assert loaded.tools["charge"].approvers == ("U0BOSS", "S0FINANCE")
    with pytest.raises(ValidationError, match="'bob' is not a Slack user id"):
        SlackPolicies.model_validate({"tools": {"charge": {"approvers": ["bob"]}}})
    with pytest.raises(ValidationError, match="not a Slack user id"):
        SlackPolicies.model_validate(
            {"tools": {"charge": {"rules": [{"when": "true", "approvers": ["bob"]}]}}}
        )


def test_policies_built_in_code_are_checked_too() -> None:
    built = Policies(default=Policy(approvers=("alice",)))
    with pytest.raises(ValidationError, match="not a Slack user id"):
        SlackPolicies.model_validate(built)
    by_address = Policies(default=Policy(approvers=("Alice@Example.com",)))
    assert SlackPolicies.model_validate(by_address).default.approvers == ("alice@example.com",)
    assert SlackPolicies.model_validate(Policies()).default.approvers == ()
