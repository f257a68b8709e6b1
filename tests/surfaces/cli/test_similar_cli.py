"""Learned rules from the command line, as real subprocesses on a real SQLite file: propose
(with the backtest of a seeded audit trail), add (a declined request needs
--confirm-declined), use (a run approved at once, citing its rule), the two-person case,
list beside the file's rules, export as TOML, revoke; bad input changes nothing."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from support.helpers import SIGNOFF
from support.helpers import Done
from support.helpers import clean_env
from support.helpers import run_text

from runtime import Policies
from runtime import Runtime
from store import open_store
from tests.support.similar_agents import agent

ROOT = Path(__file__).parents[3]
CONFIG = """\
agents = ["tests.support.similar_agents:agent"]

[policies.default]
allow_edit = true

[[policies.tools.send_wire.rules]]
when = "args.amount_cents > 1000000"
deny = "too large"

[learned_rules]
writers = ["U0WRITER1", "U0WRITER2"]
ceilings = { issue_refund = "args.amount_cents <= 5000" }
"""
RULE = 'tool == "issue_refund" && args.currency == "EUR" && args.amount_cents <= 2500'


class Signoff:
    def __init__(self, tmp_path: Path) -> None:
        self.db = tmp_path / "signoff.db"
        (tmp_path / "signoff.toml").write_text(CONFIG)
        self.cwd = tmp_path
        self.env = clean_env("SIGNOFF_", "SLACK_") | {
            "SIGNOFF_DATABASE_URL": f"sqlite:///{self.db}",
            "PYTHONPATH": str(ROOT),
        }

    def __call__(self, *args: str) -> Done:
        done = run_text([SIGNOFF, *args], cwd=self.cwd, env=self.env)
        return Done(done.returncode, done.stdout, done.stderr)

    def json(self, *args: str) -> Any:
        done = self(*args, "--json")
        assert done.code == 0, done.err
        return json.loads(done.out)

    def dump(self) -> str:
        import sqlite3
        from contextlib import closing

        with closing(sqlite3.connect(self.db)) as conn:
            return "\n".join(conn.iterdump())


def task(cents: int, currency: str = "EUR", tool: str = "issue_refund") -> str:
    args: dict[str, Any] = {"amount_cents": cents}
    args |= (
        {"order_id": f"o-{cents}", "currency": currency}
        if tool == "issue_refund"
        else {"account": "DE00"}
    )
    return json.dumps({"tool": tool, "args": args})


@pytest.fixture
async def signoff(tmp_path: Path) -> Signoff:
    """Seeded: five refunds, EUR, of which 1500 declined and 2400 edited; one USD declined."""
    cli = Signoff(tmp_path)
    async with open_store(f"sqlite:///{cli.db}") as store:
        policies = Policies.model_validate({"default": {"allow_edit": True}})
        rt = Runtime(store, [agent], policies=policies, worker_id="seed")
        for cents, currency, decision in [
            (1000, "EUR", "approved"),
            (1500, "EUR", "declined"),
            (2400, "EUR", "edited"),
            (9000, "EUR", "approved"),
            (1000, "USD", "declined"),
        ]:
            run_id = await rt.start("ops", task(cents, currency), requested_by="U0AGENT")
            [approval] = await rt.approvals(run_id)
            if decision == "declined":
                await rt.decide(approval.id, "declined", by="U0BOSS", reason="not this one")
            else:
                edited = dict(approval.args, amount_cents=cents - 400)
                args = edited if decision == "edited" else None
                await rt.decide(approval.id, "approved", by="U0BOSS", args=args)
        await rt.desk.tick(rt.clock())
    return cli


def test_propose_derives_the_rule_and_backtests_the_seeded_trail(signoff: Signoff) -> None:
    proposed = signoff.json(
        "policy", "propose", "issue_refund", json.dumps(json.loads(task(2500))["args"])
    )

    assert proposed["when"] == (
        'tool == "issue_refund" && args.amount_cents <= 2500 && args.currency == "EUR"'
    )
    tested = proposed["backtest"]
    assert (tested["considered"], tested["would_approve"]) == (5, 3)
    assert [h["decided_by"] for h in tested["declined"]] == ["U0BOSS"]
    assert len(tested["edited"]) == 1
    assert proposed["needs_second"] is False

    text = signoff("policy", "propose", "issue_refund", "--when", RULE)
    assert "of the last 5 requests for issue_refund, the rule would have approved 3" in text.out
    assert "1 of those a person declined:" in text.out


def test_making_using_listing_exporting_and_revoking_a_rule(signoff: Signoff) -> None:
    before = signoff.dump()
    refused = signoff("policy", "add", "issue_refund", RULE, "--by", "U0WRITER1", "--reason", "x")
    assert refused.code == 1
    assert "would have approved 1 request(s) a person declined" in refused.err
    assert "--confirm-declined" in refused.err
    for bad, message in [
        (["--by", "U0NOBODY"], "U0NOBODY may not write approval rules"),
        (["--by", "U0WRITER1", "--expires", "91d"], "within 90 days"),
        (["--by", "U0WRITER1", "--expires", "soon"], "--expires"),
    ]:
        done = signoff("policy", "add", "issue_refund", RULE, "--reason", "x", *bad)
        assert (done.code, message in done.err) == (1, True), done.err
    assert signoff.dump() == before

    made = signoff.json(
        "policy",
        "add",
        "issue_refund",
        RULE,
        "--by",
        "U0WRITER1",
        "--reason",
        "small EUR refunds",
        "--expires",
        "14d",
        "--confirm-declined",
    )
    assert made["state"] == "active"

    used = signoff.json("runs", "start", "ops", task(2000), "--requested-by", "U0AGENT")
    assert used["status"] == "done"
    shown = signoff("runs", "show", used["id"])
    assert f"learned rule {made['id']}" in shown.out
    exported = signoff("audit", "export", "--run", used["id"]).out.splitlines()
    [auto] = [json.loads(x) for x in exported if "approval_auto_approved" in x]
    assert f"learned rule {made['id']}" in auto["detail"]["rule"]
    parked = signoff.json("runs", "start", "ops", task(2000, "USD"), "--requested-by", "U0AGENT")
    assert parked["status"] == "waiting_approval"

    rows = signoff.json("policy", "list")
    assert [(r["source"], r["id"]) for r in rows] == [
        ("file", "send_wire#1"),
        ("learned", made["id"]),
    ]
    assert (rows[1]["uses"], rows[1]["author"], rows[1]["status"]) == (1, "U0WRITER1", "active")

    exported = tomllib.loads(signoff("policy", "export").out)
    [rule] = exported["learned_rules"]["rule"]
    assert (rule["id"], rule["when"], rule["uses"], rule["reason"]) == (
        made["id"],
        RULE,
        1,
        "small EUR refunds",
    )

    revoked = signoff("policy", "revoke", made["id"], "--by", "U0WRITER2")
    assert revoked.code == 0, revoked.err
    again = signoff.json("runs", "start", "ops", task(2100), "--requested-by", "U0AGENT")
    assert again["status"] == "waiting_approval"
    assert signoff("policy", "revoke", made["id"], "--by", "U0WRITER2").code == 1
    assert signoff.json("policy", "list")[1]["status"] == "revoked"


def test_a_rule_for_an_uncompensatable_effect_needs_a_second_writer(signoff: Signoff) -> None:
    wire = 'tool == "send_wire" && args.amount_cents <= 100'
    made = signoff.json(
        "policy", "add", "send_wire", wire, "--by", "U0WRITER1", "--reason", "test wires"
    )
    assert made["state"] == "proposed"
    parked = signoff.json("runs", "start", "ops", task(50, tool="send_wire"))
    assert parked["status"] == "waiting_approval"

    same = signoff("policy", "confirm", made["id"], "--by", "U0WRITER1")
    assert (same.code, "someone else" in same.err) == (1, True)
    assert signoff("policy", "confirm", made["id"], "--by", "U0WRITER2").code == 0
    done = signoff.json("runs", "start", "ops", task(60, tool="send_wire"))
    assert done["status"] == "done"


def test_approvals_stats_over_the_seeded_trail(signoff: Signoff) -> None:
    stats = signoff.json("approvals", "stats", "--since", "1d")
    assert (stats["requested"], stats["decided"]) == (5, 5)
    assert (stats["decline_rate"], stats["edit_rate"], stats["expiry_rate"]) == (0.4, 0.2, 0.0)
    assert stats["busiest_approvers"] == [["U0BOSS", 5]]
    text = signoff("approvals", "stats")
    assert "declined 40%, edited 20%, expired 0%" in text.out
    assert signoff("approvals", "stats", "--since", "soon").code == 1
