"""Learned rules ("approve + similar") on every store backend: a seeded audit trail gives
known backtest counts; making, the declined-needs-confirmation and two-person cases, using
(an auto-approval that cites its rule, within the tool's ceiling), expiring and revoking."""

from __future__ import annotations

from datetime import UTC
from datetime import datetime
from datetime import timedelta
from typing import Any

import pytest
from support.similar_agents import issue_refund
from support.similar_agents import reverse_refund
from support.similar_agents import send_wire

from runtime import Agent
from runtime import Policies
from runtime import Runtime
from runtime import ScriptedModel
from runtime.approvals.desk import Decision
from runtime.approvals.learned_rules import LearnedRulesConfig
from runtime.approvals.learned_rules import NeedsConfirmation
from runtime.approvals.learned_rules import RuleRefused
from runtime.approvals.learned_rules import suggest
from store import Approval
from store import ApprovalState
from store import Store
from tests.conftest import Clock

WRITERS = ("U0WRITER1", "U0WRITER2")


def runtime(store: Store, clock: Clock, **config: Any) -> Runtime:
    # From the real time on: the outbox rows the database's triggers write are dated by its
    # own clock, and the store judges them due by this one.
    clock.now = datetime.now(UTC)
    tools = [issue_refund, reverse_refund, send_wire]
    agent = Agent("ops", model=ScriptedModel(["ok"]), tools=tools)
    policies = Policies.model_validate({"default": {"allow_edit": True}})
    learned = LearnedRulesConfig.model_validate({"writers": WRITERS, **config})
    return Runtime(store, [agent], policies=policies, clock=clock, learned_rules=learned)


async def ask(
    rt: Runtime, cents: int, currency: str = "EUR", tool_name: str = "issue_refund"
) -> Approval:
    args: dict[str, Any] = {"amount_cents": cents}
    if tool_name == "issue_refund":
        args |= {"order_id": f"o-{cents}", "currency": currency}
    else:
        args |= {"account": "DE00"}
    approval, _ = await rt.request_approval(tool_name, args, requested_by="U0AGENT")
    return approval


async def seed(rt: Runtime) -> dict[str, str]:
    """Eight EUR/USD refunds with known decisions; returns approval ids by name."""
    ids: dict[str, str] = {}
    for name, cents, currency, decision in [
        ("a1000", 1000, "EUR", "approved"),
        ("a2000", 2000, "EUR", "approved"),
        ("d1500", 1500, "EUR", "declined"),
        ("e2400", 2400, "EUR", "edited"),
        ("p900", 900, "EUR", None),
        ("big", 9000, "EUR", "approved"),
        ("usd", 1000, "USD", "declined"),
        ("a2500", 2500, "EUR", "approved"),
    ]:
        approval = await ask(rt, cents, currency)
        ids[name] = approval.id
        if decision == "edited":
            args = dict(approval.args, amount_cents=cents - 400)
            await rt.decide(approval.id, "approved", by="U0BOSS", args=args)
        elif decision:
            state: Decision = "approved" if decision == "approved" else "declined"
            await rt.decide(approval.id, state, by="U0BOSS", reason="no")
    return ids


RULE = 'tool == "issue_refund" && args.currency == "EUR" && args.amount_cents <= 2500'


def test_a_call_suggests_a_rule_without_its_ids() -> None:
    args = {"order_id": "o-1", "amount_cents": 2500, "currency": "EUR", "note": "a long text"}
    assert suggest("issue_refund", args) == (
        'tool == "issue_refund" && args.amount_cents <= 2500 && args.currency == "EUR"'
    )


async def test_the_backtest_counts_what_the_seeded_audit_trail_holds(
    store: Store, clock: Clock
) -> None:
    rt = runtime(store, clock)
    ids = await seed(rt)
    await store.set_approval_message(ids["d1500"], channel="C0A", ts="1.2", delivery="delivered")

    tested = await rt.rules.backtest("issue_refund", RULE)

    assert tested.considered == 8
    assert tested.would_approve == 6  # all EUR up to 2500: a1000 a2000 d1500 e2400 p900 a2500
    assert [h.approval_id for h in tested.declined] == [ids["d1500"]]
    assert [h.approval_id for h in tested.edited] == [ids["e2400"]]
    assert [h.decided_by for h in tested.declined] == ["U0BOSS"]
    assert [h.card for h in tested.declined] == [("C0A", "1.2")]  # to link it
    assert len(tested.of("pending")) == 1
    assert (await rt.rules.backtest("issue_refund", RULE, size=2)).considered == 2


async def test_a_rule_that_would_have_approved_a_decline_needs_explicit_confirmation(
    store: Store, clock: Clock
) -> None:
    rt = runtime(store, clock)
    await seed(rt)

    with pytest.raises(NeedsConfirmation) as refused:
        await rt.rules.make("issue_refund", RULE, author="U0WRITER1", reason="small EUR refunds")
    assert len(refused.value.backtest.declined) == 1
    assert await rt.rules.list() == []

    rule, _ = await rt.rules.make(
        "issue_refund", RULE, author="U0WRITER1", reason="small EUR", confirm_declined=True
    )
    assert (rule.state, rule.expires_at - rule.created_at) == ("active", timedelta(days=7))


async def test_bad_rules_are_refused_and_nothing_is_stored(store: Store, clock: Clock) -> None:
    rt = runtime(store, clock)
    make = rt.rules.make
    with pytest.raises(RuleRefused, match="may not write"):
        await make("issue_refund", RULE, author="U0NOBODY", reason="r")
    with pytest.raises(RuleRefused, match="no argument 'cents'"):
        await make("issue_refund", "args.cents < 5", author="U0WRITER1", reason="r")
    with pytest.raises(RuleRefused, match="not a CEL expression"):
        await make("issue_refund", "args.amount_cents <", author="U0WRITER1", reason="r")
    with pytest.raises(RuleRefused, match="within 90 days"):
        await make("issue_refund", RULE, author="U0WRITER1", reason="r", expires_in=timedelta(91))
    with pytest.raises(RuleRefused, match="needs a reason"):
        await make("issue_refund", RULE, author="U0WRITER1", reason="  ")
    with pytest.raises(RuleRefused, match="no tool"):
        await make("nope", "true", author="U0WRITER1", reason="r")
    assert await rt.rules.list() == []


async def test_a_rule_approves_later_calls_at_once_and_the_approval_cites_it(
    store: Store, clock: Clock
) -> None:
    rt = runtime(store, clock, ceilings={"issue_refund": "args.amount_cents <= 2000"})
    rule, _ = await rt.rules.make("issue_refund", RULE, author="U0WRITER1", reason="small EUR")

    used = await ask(rt, 1800)
    over_ceiling = await ask(rt, 2200)  # the rule holds, the ceiling does not
    other = await ask(rt, 1800, "USD")

    assert used.state == ApprovalState.APPROVED
    assert used.decided_by == "signoff"
    assert used.rule is not None
    assert used.rule.learned_id == rule.id
    assert rule.id in (used.reason or "")
    assert over_ceiling.state == other.state == ApprovalState.PENDING
    events = await store.list_audit(approval_id=used.id)
    assert [(e.action, rule.id in e.detail["rule"]) for e in events] == [
        ("approval_auto_approved", True)
    ]
    assert (await rt.rules.get(rule.id)).uses == 1


async def test_an_uncompensatable_tool_needs_a_second_writer(store: Store, clock: Clock) -> None:
    rt = runtime(store, clock)
    wire = 'tool == "send_wire" && args.amount_cents <= 100'
    rule, _ = await rt.rules.make("send_wire", wire, author="U0WRITER1", reason="test wires")
    assert (rule.state, rule.needs_second) == ("proposed", True)
    assert (await ask(rt, 50, tool_name="send_wire")).state == ApprovalState.PENDING

    with pytest.raises(RuleRefused, match="someone else"):
        await rt.rules.confirm(rule.id, by="U0WRITER1")
    with pytest.raises(RuleRefused, match="may not write"):
        await rt.rules.confirm(rule.id, by="U0NOBODY")
    confirmed = await rt.rules.confirm(rule.id, by="U0WRITER2")
    assert (confirmed.state, confirmed.confirmed_by) == ("active", "U0WRITER2")
    with pytest.raises(RuleRefused, match="not proposed"):
        await rt.rules.confirm(rule.id, by="U0WRITER2")

    assert (await ask(rt, 50, tool_name="send_wire")).state == ApprovalState.APPROVED


async def test_a_rule_stops_at_expiry_and_when_revoked(store: Store, clock: Clock) -> None:
    rt = runtime(store, clock)
    rule, _ = await rt.rules.make(
        "issue_refund", RULE, author="U0WRITER1", reason="r", expires_in=timedelta(days=2)
    )
    assert (await ask(rt, 100)).state == ApprovalState.APPROVED

    clock.advance(hours=23)
    assert await rt.rules.expiring() == []
    clock.advance(hours=2)  # within a day of expiry: the author is reminded once
    [due] = await rt.rules.expiring()
    assert (due.id, due.uses) == (rule.id, 1)
    assert await rt.rules.expiring() == []
    # The DM was queued with the mark, once, for the outbox sender to deliver.
    assert [(t, s) for t, s, _ in await sent_rows(store, clock) if t == "rule_expiring"] == [
        ("rule_expiring", rule.id)
    ]

    clock.advance(days=1)
    assert (await ask(rt, 100)).state == ApprovalState.PENDING
    assert (await rt.rules.get(rule.id)).status(clock()) == "expired"

    second, _ = await rt.rules.make("issue_refund", RULE, author="U0WRITER1", reason="again")
    revoked = await rt.rules.revoke(second.id, by="U0WRITER2")
    assert (revoked.state, revoked.revoked_by) == ("revoked", "U0WRITER2")
    assert (await ask(rt, 100)).state == ApprovalState.PENDING
    with pytest.raises(RuleRefused, match="revoked already"):
        await rt.rules.revoke(second.id, by="U0WRITER1")
    actions = [e.action for e in await store.list_audit() if e.action.startswith("rule_")]
    assert actions == ["rule_made", "rule_made", "rule_revoked"]


async def test_uses_are_told_once_per_batch(store: Store, clock: Clock) -> None:
    rt = runtime(store, clock)
    origin = await ask(rt, 3000)
    await rt.decide(origin.id, "approved", by="U0WRITER1")
    rule, _ = await rt.rules.make(
        "issue_refund", RULE, author="U0WRITER1", reason="r", from_approval=origin.id
    )
    clock.advance(seconds=1)
    used = [(await ask(rt, 100)).id, (await ask(rt, 200)).id]

    [told] = await rt.rules.uses_to_tell()
    assert (told.rule.id, sorted(a for a, _, _ in told.approvals)) == (rule.id, sorted(used))
    assert await rt.rules.uses_to_tell() == []
    # The note was queued with the mark, once, about the card the rule grew from.
    queued = await sent_rows(store, clock)
    [(subject, detail)] = [(s, d) for t, s, d in queued if t == "rule_uses_noted"]
    assert (subject, detail["rule_id"]) == (origin.id, rule.id)
    assert datetime.fromisoformat(detail["until"]) == told.approvals[-1][2]
    clock.advance(seconds=1)
    later = (await ask(rt, 300)).id
    assert [[a for a, _, _ in t.approvals] for t in await rt.rules.uses_to_tell()] == [[later]]


async def sent_rows(store: Store, clock: Clock) -> list[tuple[str, str, dict[str, Any]]]:
    """Every outbox row, in the order a sender delivers them (each claimed, then finished)."""
    found = []
    while True:
        now = clock()
        items = await store.claim_outbox("t", now=now, until=now + timedelta(minutes=1))
        if not items:
            return found
        for item in items:
            found.append((item.topic, item.subject_id, item.detail))
            await store.finish_outbox(item.id, "t", at=now)
