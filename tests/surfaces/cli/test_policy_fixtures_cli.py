"""`signoff policy test FILE` runs fixtures (a call after its history, with what should
happen to it and the limit's state) through the real engine, and exits 1 naming each wrong
expectation; `signoff policy backtest` replays the audit trail through a changed file and
lists what would have gone otherwise."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from support import spend_agents
from support.helpers import Done
from support.helpers import signoff_in

from runtime import Policies
from runtime import Runtime
from store import open_store

SUPPORT = Path(__file__).parents[2] / "support"
CONFIG = spend_agents.limits_config(50_000)
FIXTURES = """
[[calls]]
name = "a small refund is approved at once"
tool = "issue_refund"
args = { customer_id = "c1", order_id = "o1", amount_cents = 5000 }
expect = "approve"
expect_limits = { per_customer = { used = 5000, left = 45000 } }

[[calls]]
name = "past $500 this month a lead is asked"
tool = "issue_refund"
args = { customer_id = "c1", order_id = "o3", amount_cents = 9000 }
expect = "ask"
expect_policy = "refund_leads"
expect_limits = { per_customer = { used = 54000, left = -4000 } }
[[calls.history]]
tool = "issue_refund"
args = { customer_id = "c1", order_id = "o1", amount_cents = 45000 }
ago = "3d"

[[calls]]
name = "a refund of last month no longer counts"
tool = "issue_refund"
args = { customer_id = "c1", order_id = "o4", amount_cents = 9000 }
expect = "approve"
expect_limits = { per_customer = { used = 9000 } }
[[calls.history]]
tool = "issue_refund"
args = { customer_id = "c1", order_id = "o1", amount_cents = 45000 }
ago = "32d"
"""


def signoff(tmp_path: Path, *args: str) -> Done:
    return signoff_in(tmp_path, SUPPORT, *args)


def test_fixtures_pass_and_a_wrong_expectation_fails_by_name(tmp_path: Path) -> None:
    (tmp_path / "signoff.toml").write_text(CONFIG)
    (tmp_path / "fixtures.toml").write_text(FIXTURES)
    done = signoff(tmp_path, "policy", "test", "fixtures.toml")
    assert done.code == 0, done.err
    assert done.out.splitlines() == [
        "ok   a small refund is approved at once: approve; per_customer: used 5000, left 45000",
        "ok   past $500 this month a lead is asked: ask (policy refund_leads); per_customer: "
        "used 54000, left -4000",
        "ok   a refund of last month no longer counts: approve; per_customer: used 9000, "
        "left 41000",
    ]
    assert not (tmp_path / "signoff.db").exists()  # fixtures touch no real database

    wrong = FIXTURES.replace('expect = "ask"', 'expect = "approve"').replace(
        "used = 9000", "used = 54000"
    )
    (tmp_path / "fixtures.toml").write_text(wrong)
    done = signoff(tmp_path, "policy", "test", "fixtures.toml")
    assert done.code == 1
    assert done.err.splitlines() == [
        "past $500 this month a lead is asked: expected approve, got ask",
        "a refund of last month no longer counts: expected per_customer.used = 54000, got 9000",
        "2 of 3 fixtures failed",
    ]
    assert done.out.startswith("ok   a small refund")

    (tmp_path / "fixtures.toml").write_text('[[calls]]\nname = "x"\ntool = "issue_refund"\n')
    done = signoff(tmp_path, "policy", "test", "fixtures.toml")
    assert done.code == 2  # a configuration error, as for signoff.toml
    assert "fixtures.toml: calls.0.expect: Field required" in done.err


async def past_requests(url: str) -> None:
    """Three refunds asked of a person under a file without rules; two were approved."""
    async with open_store(url) as store:
        policies = Policies.model_validate({"default": {"approvers": ["U0APPROVER"]}})
        rt = Runtime(store, [spend_agents.agent], policies=policies)
        for i, cents in enumerate([2000, 8000, 30000]):
            task = spend_agents.refund(f"c{i}", f"o{i}", cents)
            run_id = await rt.start("refunds", task, requested_by="U0ASKER")
            (approval,) = await rt.approvals(run_id)
            decision = "declined" if cents == 8000 else "approved"
            await rt.decide(approval.id, decision, by="U0APPROVER", resume=False)


def test_backtest_lists_what_the_changed_file_would_have_done_otherwise(
    tmp_path: Path, world: Path
) -> None:
    asyncio.run(past_requests(f"sqlite:///{tmp_path / 'signoff.db'}"))
    (tmp_path / "changed.toml").write_text(CONFIG)
    done = signoff(tmp_path, "--config", "changed.toml", "policy", "backtest", "--json")
    assert done.code == 0, done.err
    changes = json.loads(done.out)
    assert [(c["args"]["amount_cents"], c["was"], c["would"], c["decided"]) for c in changes] == [
        (8000, "ask (1 approval(s))", "auto_approve", "declined by U0APPROVER"),
        (2000, "ask (1 approval(s))", "auto_approve", "approved by U0APPROVER"),
    ]
    done = signoff(tmp_path, "--config", "changed.toml", "policy", "backtest")
    assert "2 of 3 requests would have gone otherwise" in done.out
