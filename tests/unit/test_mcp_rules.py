"""The MCP proxy's rules: first match wins, annotations decide otherwise, and nothing that
goes wrong lets a call through."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from signoff.mcp_rules import Rule
from signoff.mcp_rules import judge
from signoff.mcp_rules import load_rules


class Annotations:
    def __init__(self, read_only_hint: bool | None = None) -> None:
        self.read_only_hint = read_only_hint


READS = Annotations(read_only_hint=True)


def test_without_rules_read_only_tools_pass_and_every_other_asks() -> None:
    assert judge((), "read", {}, READS).action == "allow"
    assert judge((), "write", {}, Annotations()).action == "ask"
    assert judge((), "unannotated", {}, None).action == "ask"


def test_the_first_matching_rule_wins_over_the_annotations() -> None:
    rules = (
        Rule(when="args.amount > 100", action="ask", policy="finance"),
        Rule(when="tool == 'transfer'", action="allow"),
        Rule(when="true", action="deny", reason="nothing else"),
    )
    big = judge(rules, "transfer", {"amount": 500}, None)
    assert (big.action, big.policy) == ("ask", "finance")
    assert judge(rules, "transfer", {"amount": 5}, None).action == "allow"
    denied = judge(rules, "read", {"amount": 1}, READS)
    assert (denied.action, denied.reason) == ("deny", "nothing else")


def test_a_rule_that_fails_on_a_call_asks_rather_than_allows() -> None:
    rules = (Rule(when="args.amount > 100", action="allow"),)
    assert judge(rules, "transfer", {}, READS).action == "ask"  # no such argument
    assert judge(rules, "transfer", {"amount": "lots"}, READS).action == "ask"  # wrong type


def test_a_rule_must_compile_and_only_asking_routes() -> None:
    with pytest.raises(ValidationError, match="is not CEL"):
        Rule(when="tool ==", action="deny")
    with pytest.raises(ValidationError, match="only a rule that asks routes"):
        Rule(when="true", action="allow", policy="finance")
    with pytest.raises(ValidationError):
        Rule(when="true", action="maybe")  # type: ignore[arg-type]


def test_rules_load_from_toml(tmp_path: Path) -> None:
    path = tmp_path / "rules.toml"
    path.write_text('[[rule]]\nwhen = "tool == \'rm\'"\naction = "deny"\nreason = "no"\n')
    assert load_rules(path) == (Rule(when="tool == 'rm'", action="deny", reason="no"),)
    assert load_rules(None) == ()
    path.write_text('[[rule]]\nwhen = "true"\naction = "allow"\ncolour = "red"\n')
    with pytest.raises(ValidationError, match="colour"):
        load_rules(path)
