"""Approval rules from the command line, as real subprocesses: every start-up mistake is one
line with file:line and creates nothing; `signoff policy check` says which rule matches, why,
and what would happen; the refund example's signoff.toml passes it; `approvals list` and
`runs show` show the rule an approval was made under."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.helpers import Done
from support.helpers import signoff_in

ROOT = Path(__file__).parents[3]
EXAMPLE = ROOT / "examples" / "signoff.toml"
HEAD = """\
agents = ["examples.refund_agent:agent"]

[policies.default]
timeout = "24h"

[[policies.tools.issue_refund.rules]]
when = "args.amount_cents <= 2500"
auto_approve = true

[[policies.tools.issue_refund.rules]]
"""  # the second rule's settings follow, from line 11


@pytest.fixture
def signoff(tmp_path: Path) -> object:
    def run(*args: str) -> Done:
        return signoff_in(tmp_path, ROOT, *args)

    return run


MISTAKES = {
    "does not parse": (
        'when = "args.amount_cents >"\ndeny = "no"\n',
        "policies.tools.issue_refund.rules.1.when: `args.amount_cents >` is not a "
        "CEL expression (the error is at column 19)",
    ),
    "unknown argument": (
        'when = "args.amount > 100000"\ndeny = "no"\n',
        "policies.tools.issue_refund.rules.1.when: rule 2: issue_refund has no argument "
        "'amount' (its arguments: order_id, amount_cents, restocking_fee_cents)",
    ),
    "wrong type": (
        'when = "args.amount_cents > \'100000\'"\ndeny = "no"\n',
        "policies.tools.issue_refund.rules.1.when: rule 2: compares args.amount_cents (int) "
        "with '100000' (string); CEL never finds these equal or ordered",
    ),
    "int against double": (
        'when = "run.usage.cost > 2"\ndeny = "no"\n',
        "rule 2: compares run.usage.cost (double) with 2 (int); CEL never finds these equal "
        "or ordered (write 1.0 for a double, 1 for an int)",
    ),
    "unknown run field": (
        'when = "run.user == \'U0X\'"\ndeny = "no"\n',
        "rule 2: run has no field 'user' (it has id, agent, task, requested_by, usage)",
    ),
    "unknown name": (
        'when = "amount_cents > 5"\ndeny = "no"\n',
        "rule 2: unknown name 'amount_cents'; a rule sees args, tool, run, now, limits",
    ),
}


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_a_rule_mistake_is_one_line_with_file_and_line_and_creates_nothing(
    signoff: object, tmp_path: Path, mistake: str
) -> None:
    rule, expected = MISTAKES[mistake]
    (tmp_path / "signoff.toml").write_text(HEAD + rule, "utf-8")

    done = signoff("runs", "start", "refund-agent", "Refund order 4471")  # type: ignore[operator]

    assert done.code == 2  # a configuration error, in every command
    assert done.err.count("\n") == 1
    assert done.err.startswith("error: signoff.toml:11: ")
    assert expected in done.err
    assert not (tmp_path / "signoff.db").exists()


def test_a_rule_both_approving_and_denying_is_refused_at_its_line(
    signoff: object, tmp_path: Path
) -> None:
    rule = 'when = "true"\nauto_approve = true\ndeny = "no"\n'
    (tmp_path / "signoff.toml").write_text(HEAD + rule, "utf-8")

    done = signoff("policy", "check", "issue_refund", "{}")  # type: ignore[operator]

    assert done.code == 2
    # the rule as a whole is wrong: its header's line
    assert done.err.startswith("error: signoff.toml:10: policies.tools.issue_refund.rules.1: ")
    assert "either approves at once (auto_approve) or denies, not both" in done.err


CHECK = ["--config", str(EXAMPLE), "policy", "check", "issue_refund"]


def test_policy_check_says_which_rule_matches_why_and_what_would_happen(signoff: object) -> None:
    args = '{"order_id": "4471", "amount_cents": 30000}'

    done = signoff(*CHECK, args, "--requested-by", "U0ASKER")  # type: ignore[operator]

    assert done.code == 0, done.err
    assert done.out.splitlines() == [
        'issue_refund {"order_id": "4471", "amount_cents": 30000, "restocking_fee_cents": 0}',
        "matches: rule 3: over $200, or an intern asks → 2 approvals from S0FINANCELEADS in "
        "C0REFUNDSLARGE",
        "because: `args.amount_cents > 20000 || run.requested_by in ['U0INTERN']` holds; "
        "rules 1-2 did not hold",
        "would: ask S0FINANCELEADS for 2 approval(s) in C0REFUNDSLARGE (declined as expired "
        "after 1d)",
    ]


@pytest.mark.parametrize(
    ("cents", "requester", "action", "rule"),
    [
        (1000, "U0ASKER", "auto_approve", 1),
        (1000, "U0INTERN", "auto_approve", 1),  # first match: rule 1 before rule 3
        (150_000, "U0ASKER", "deny", 2),
        (5000, "U0INTERN", "ask", 3),
        (5000, "U0ASKER", "ask", None),
    ],
)
def test_the_refund_examples_rules_in_ci(
    signoff: object, cents: int, requester: str, action: str, rule: int | None
) -> None:
    args = json.dumps({"order_id": "4471", "amount_cents": cents})

    done = signoff(*CHECK, args, "--requested-by", requester, "--expect", action, "--json")  # type: ignore[operator]

    assert done.code == 0, done.out + done.err
    report = json.loads(done.out)
    assert report["action"] == action
    assert report["rule"]["number"] == rule


def test_policy_check_exits_1_when_the_call_would_do_otherwise(
    signoff: object, tmp_path: Path
) -> None:
    args = '{"order_id": "4471", "amount_cents": 150000}'

    done = signoff(*CHECK, args, "--expect", "ask")  # type: ignore[operator]

    assert done.code == 1
    assert "expected ask, but the call would deny" in done.out
    assert "refunds over $1,000 go through the finance desk" in done.out
    assert not (tmp_path / "signoff.db").exists()


def test_policy_check_refuses_arguments_the_tool_would_refuse(signoff: object) -> None:
    done = signoff(*CHECK, '{"order_id": "4471"}')  # type: ignore[operator]

    assert done.code == 1
    assert done.err == (
        "error: ARGS: invalid arguments for issue_refund: amount_cents: Field required\n"
    )


def test_policy_check_refuses_a_tool_nobody_has_so_a_typo_fails_ci(signoff: object) -> None:
    done = signoff("--config", str(EXAMPLE), "policy", "check", "issue_refnud", "{}")  # type: ignore[operator]

    assert done.code == 1
    assert done.err.startswith("error: no configured agent has a tool 'issue_refnud'")
    assert "issue_refund" in done.err  # the tools it does know


def test_policy_check_of_a_tool_that_needs_no_approval_says_it_just_runs(signoff: object) -> None:
    args = '{"to": "a@example.com", "subject": "s", "body": "b"}'
    done = signoff("--config", str(EXAMPLE), "policy", "check", "send_email", args, "--json")  # type: ignore[operator]

    assert done.code == 0, done.err
    assert json.loads(done.out)["action"] == "run"
    text = signoff("--config", str(EXAMPLE), "policy", "check", "send_email", args).out  # type: ignore[operator]
    assert text.splitlines()[-1] == (
        "would: run without asking: the tool needs no approval (rules not used)"
    )
    assert "would: ask" not in text


def test_approvals_list_shows_the_rule(signoff: object, tmp_path: Path) -> None:
    config = ["--config", str(EXAMPLE)]
    # An intern asks: rule 3 routes the refund to two finance leads.
    started = signoff(
        *config,
        "runs",
        "start",
        "refund-agent",
        "Refund order 4471",  # type: ignore[operator]
        "--run-id",
        "r1",
        "--requested-by",
        "U0INTERN",
    )
    assert started.code == 0, started.err

    listed = signoff(*config, "approvals", "list", "--json")  # type: ignore[operator]
    shown = signoff(*config, "approvals", "list")  # type: ignore[operator]

    [approval] = json.loads(listed.out)
    assert approval["rule"]["number"] == 3
    assert approval["required_approvals"] == 2
    assert "rule 3: over $200, or an intern asks" in shown.out  # the table's rule column
    assert "S0FINANCELEADS" in shown.out
    run = signoff(*config, "runs", "show", "r1")  # type: ignore[operator]
    assert "(rule 3: over $200, or an intern asks" in " ".join(run.out.split())
