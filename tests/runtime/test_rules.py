"""Approval rules on a real SQLite store: first match wins; each action (approve at once, deny
at once, route to a quorum); a rule that fails while it runs fails closed; an approval keeps
the rule it was created under when the rules change before the decision."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from collections.abc import Awaitable
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from approvals_conftest_helpers import RecordingNotifier

from runtime import Agent
from runtime import Policies
from runtime import Runtime
from runtime import ScriptedModel
from runtime import ToolContext
from runtime import errors
from runtime import tool
from runtime import tool_call
from store import Approval
from store import ApprovalState
from store import RunStatus
from store import Store
from store import open_store

PAID: list[dict[str, Any]] = []
LEADS = ["U0LEAD1", "U0LEAD2", "U0LEAD3"]
RULES: list[dict[str, Any]] = [
    {"when": "args.cents <= 2500", "auto_approve": True, "label": "up to $25"},
    {"when": "args.cents > 100000", "deny": "refunds over $1,000 go through the finance desk"},
    {
        "when": "args.cents > 20000 || run.requested_by in ['U0INTERN']",
        "label": "amount over $200",
        "approvers": LEADS,
        "required_approvals": 2,
    },
]


def policies(rules: list[dict[str, Any]] = RULES) -> Policies:
    return Policies.model_validate(
        {"tools": {"refund": {"approvers": ["U0CLERK"], "timeout": "1h", "rules": rules}}}
    )


@tool(description="Refund an order.", effect="irreversible")
async def refund(order: str, cents: int, *, ctx: ToolContext) -> dict[str, Any]:
    PAID.append({"order": order, "cents": cents})
    return {"refunded": cents}


def agent(order: str, cents: int) -> Agent:
    call = tool_call("refund", {"order": order, "cents": cents})
    return Agent("refunds", model=ScriptedModel([call, "Done."]), tools=[refund])


Boot = Callable[..., Awaitable[Runtime]]


@pytest.fixture
async def boot(tmp_path: Path) -> AsyncIterator[Boot]:
    """A runtime on the test's SQLite file; each call is a new process with its own rules."""
    PAID.clear()
    stores: list[Store] = []

    async def start(
        order: str = "A-1",
        cents: int = 1000,
        rules: Policies | None = None,
        notifier: RecordingNotifier | None = None,
    ) -> Runtime:
        store = await open_store(f"sqlite:///{tmp_path / 'rules.db'}")
        stores.append(store)
        return Runtime(
            store, [agent(order, cents)], notifier, policies=rules or policies(), worker_id="w1"
        )

    yield start
    for store in stores:
        await store.close()


async def ask(rt: Runtime, requested_by: str = "U0ASKER") -> Approval:
    run_id = await rt.start("refunds", "Refund it", run_id="r1", requested_by=requested_by)
    [approval] = await rt.approvals(run_id)
    return approval


async def test_the_first_rule_that_holds_decides_even_when_a_later_one_also_holds(
    boot: Boot,
) -> None:
    # An intern's $10 refund: rule 1 (up to $25) and rule 3 (an intern asks) both hold.
    small = await ask(await boot(cents=1000), requested_by="U0INTERN")

    assert small.rule is not None
    assert small.rule.number == 1
    assert small.state == ApprovalState.APPROVED


async def test_a_deny_rule_before_a_routing_rule_wins(boot: Boot) -> None:
    huge = await ask(await boot(cents=200_000), requested_by="U0INTERN")

    assert huge.rule is not None
    assert (huge.rule.number, huge.rule.action) == (2, "deny")
    assert huge.state == ApprovalState.DECLINED
    assert PAID == []


async def test_auto_approve_runs_the_call_at_once_asks_no_one_and_is_audited(
    boot: Boot, tmp_path: Path
) -> None:
    notifier = RecordingNotifier()
    rt = await boot(cents=1000, notifier=notifier)

    approval = await ask(rt)

    assert (await rt.get("r1")).status == RunStatus.DONE
    assert PAID == [{"order": "A-1", "cents": 1000}]
    assert approval.decided_by == "signoff"
    assert approval.rule is not None
    assert approval.rule.summary == "rule 1: up to $25 → approved at once"
    assert notifier.requested == []  # no card, no one asked
    events = [e for e in await rt.store.list_events(run_id="r1") if e.approval_id == approval.id]
    events = [e for e in events if e.action.startswith("approval_")]  # not the execution's
    assert [(e.action, e.actor, e.detail["rule"]) for e in events] == [
        ("approval_auto_approved", "signoff", "rule 1: up to $25 → approved at once")
    ]
    effects = await rt.store.list_effects("r1")
    assert [e.approval_id for e in effects] == [approval.id]
    assert outbox_topics(tmp_path, approval.id) == []  # no card for Slack to post


def outbox_topics(folder: Path, subject: str) -> list[str]:
    with closing(sqlite3.connect(folder / "rules.db")) as conn:
        rows = conn.execute("SELECT topic FROM outbox WHERE subject_id = ?", (subject,))
        return [topic for (topic,) in rows]


async def test_deny_declines_at_once_and_the_model_reads_the_deny_text(boot: Boot) -> None:
    notifier = RecordingNotifier()
    rt = await boot(cents=150_000, notifier=notifier)

    approval = await ask(rt)

    assert (await rt.get("r1")).status == RunStatus.DONE
    assert PAID == []
    assert notifier.requested == []
    assert approval.reason == "refunds over $1,000 go through the finance desk"
    [result] = [m for m in (await rt.state_at("r1", 2)).messages if m.role == "tool"]
    assert "refunds over $1,000 go through the finance desk" in result.content
    assert "rule 2: args.cents > 100000 → declined at once" in result.content
    assert '"executed":false' in result.content
    events = [e for e in await rt.store.list_events(run_id="r1") if e.approval_id == approval.id]
    assert [(e.action, e.detail["reason"]) for e in events] == [
        ("approval_denied", "refunds over $1,000 go through the finance desk")
    ]


async def test_a_routing_rule_asks_its_approvers_for_its_quorum(boot: Boot, tmp_path: Path) -> None:
    notifier = RecordingNotifier()
    rt = await boot(cents=30_000, notifier=notifier)

    approval = await ask(rt)

    assert approval.state == ApprovalState.PENDING
    assert approval.required_approvals == 2
    assert approval.rule is not None
    assert approval.rule.summary == (
        "rule 3: amount over $200 → 2 approvals from U0LEAD1, U0LEAD2, U0LEAD3"
    )
    assert [a.id for a in notifier.requested] == [approval.id]
    assert outbox_topics(tmp_path, approval.id) == ["approval_requested"]
    with pytest.raises(errors.NotAnApprover):  # the tool's own approver is not the rule's
        await rt.decide(approval.id, "approved", by="U0CLERK")
    assert (await rt.decide(approval.id, "approved", by="U0LEAD1")).state == "pending"
    assert PAID == []
    assert (await rt.decide(approval.id, "approved", by="U0LEAD2")).state == "approved"
    assert PAID == [{"order": "A-1", "cents": 30_000}]


async def test_no_rule_holding_asks_under_the_tools_policy(boot: Boot) -> None:
    approval = await ask(await boot(cents=5000))

    assert approval.rule is not None
    assert approval.rule.kind == "no_match"
    assert approval.rule.summary == "no rule matched → policy refund: 1 approval from U0CLERK"
    with pytest.raises(errors.NotAnApprover):
        await (await boot()).decide(approval.id, "approved", by="U0LEAD1")


FAILING = [
    {"when": "int(args.order) > 9000", "auto_approve": True},  # "A-1" is no number
    *RULES[1:],
]


async def test_a_rule_that_fails_while_it_runs_never_approves_and_asks_the_strictest(
    boot: Boot,
) -> None:
    rt = await boot(order="A-1", cents=10, rules=policies(FAILING))

    approval = await ask(rt)

    assert approval.state == ApprovalState.PENDING
    assert PAID == []
    assert approval.rule is not None
    assert (approval.rule.kind, approval.rule.number) == ("error", 1)
    assert approval.rule.summary.startswith("rule 1 could not be evaluated (")
    assert approval.rule.summary.endswith(
        "→ the most restrictive policy, rule 3: 2 approvals from U0LEAD1, U0LEAD2, U0LEAD3"
    )
    assert approval.required_approvals == 2
    with pytest.raises(errors.NotAnApprover):
        await rt.decide(approval.id, "approved", by="U0CLERK")


async def test_a_condition_that_is_not_true_or_false_fails_closed(boot: Boot) -> None:
    rules = [{"when": "args.cents", "auto_approve": True}]
    approval = await ask(await boot(cents=10, rules=policies(rules)))

    assert approval.state == ApprovalState.PENDING
    assert approval.rule is not None
    assert approval.rule.error == "gave 10, not true or false"
    assert PAID == []


async def test_an_approval_keeps_the_rule_it_was_created_under(boot: Boot) -> None:
    first = await boot(cents=30_000)
    approval = await ask(first)
    # The rules change before anyone decides: large refunds now go to one other person,
    # and the same amount would now be approved at once.
    changed = [
        {"when": "args.cents > 20000", "approvers": ["U0OTHER"]},
        {"when": "true", "auto_approve": True},
    ]
    later = await boot(cents=30_000, rules=policies(changed))

    with pytest.raises(errors.NotAnApprover):
        await later.decide(approval.id, "approved", by="U0OTHER")
    assert PAID == []
    await later.decide(approval.id, "approved", by="U0LEAD1")
    decided = await later.decide(approval.id, "approved", by="U0LEAD3")

    assert decided.state == ApprovalState.APPROVED
    assert decided.rule == approval.rule
    assert decided.rule is not None
    assert decided.rule.number == 3
    assert PAID == [{"order": "A-1", "cents": 30_000}]
