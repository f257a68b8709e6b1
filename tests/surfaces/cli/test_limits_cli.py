"""`[limits]` mistakes stop the command that reads them with one line, `signoff.toml:N:`, and
create nothing: a key naming an argument the tool lacks, a policy that does not exist, a
window that is not one, a limit that does not say what happens past it, a rule reading a
limit that does not count its tool."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.helpers import Done
from support.helpers import signoff_in

ROOT = Path(__file__).parents[3]
HEAD = """\
agents = ["examples.refund_agent:agent"]

[policies.tools.refund_leads]
approvers = ["U0LEAD"]

[limits.per_order]
tools = ["issue_refund"]
max = 50000
"""  # the limit's other settings follow, from line 9


def run(tmp_path: Path, *args: str) -> Done:
    return signoff_in(tmp_path, ROOT, *args)


MISTAKES = {
    "unknown argument": (
        'window = "30d"\nask = "refund_leads"\nkey = "args.customer_id"\n',
        11,
        "limits.per_order.key: issue_refund has no argument 'customer_id' (its arguments: "
        "order_id, amount_cents, restocking_fee_cents)",
    ),
    "unknown policy": (
        'window = "30d"\nask = "leads"\n',
        10,
        "limits.per_order.ask: no policy 'leads' (the policies: default, refund_leads)",
    ),
    "not a window": (
        'window = "monthly"\ndeny = "no"\n',
        9,
        "limits.per_order.window: 'monthly' is not a duration with a unit",
    ),
    "nothing past it": (
        'window = "1h"\n',
        6,
        'limits.per_order: say what happens past the limit: ask = "<policy>" or deny',
    ),
    "not a time zone": (
        'window = "day"\ntimezone = "Mars/Olympus"\ndeny = "no"\n',
        10,
        "limits.per_order.timezone: 'Mars/Olympus' is not a time zone",
    ),
    "an amount that is not CEL": (
        'window = "1h"\ndeny = "no"\namount = "args.amount_cents +"\n',
        11,
        "limits.per_order.amount: `args.amount_cents +` is not a CEL expression",
    ),
}


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_a_limit_mistake_is_one_line_with_file_and_line_and_creates_nothing(
    tmp_path: Path, mistake: str
) -> None:
    text, line, expected = MISTAKES[mistake]
    (tmp_path / "signoff.toml").write_text(HEAD + text, "utf-8")

    done = run(tmp_path, "runs", "start", "refund-agent", "Refund order 4471")

    assert done.code == 2  # a configuration error, in every command
    assert done.err.count("\n") == 1, done.err
    assert done.err.startswith(f"error: signoff.toml:{line}: "), done.err
    assert expected in done.err
    assert not (tmp_path / "signoff.db").exists()


def test_a_rule_reading_a_limit_that_does_not_count_its_tool_is_refused(tmp_path: Path) -> None:
    rules = """
[[policies.tools.issue_refund.rules]]
when = "limits.per_customer.used > 100"
deny = "no"
"""
    (tmp_path / "signoff.toml").write_text(HEAD + 'window = "1h"\ndeny = "no"\n' + rules)

    done = run(tmp_path, "policy", "check", "issue_refund", "{}")

    assert done.code == 2
    assert done.err.startswith("error: signoff.toml:13: "), done.err
    assert "no limit 'per_customer' counts issue_refund's calls (its limits: per_order)" in (
        done.err
    )
