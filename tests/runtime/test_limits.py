"""Limits that see history, on every store backend: a call within its limit holds its
amount and settles it when its effect completes; past the limit it is asked under the
limit's policy (held once a person approves) or declined; a decline, a failure before the
provider was called, or a compensation gives the amount back; a key the call lacks asks;
rules read `limits.<name>.used`; the window moves with the database's clock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support import spend_agents
from support.spend_agents import PER_CUSTOMER
from support.spend_agents import refund
from support.spend_agents import task

from runtime import Policies
from runtime import Runtime
from runtime.errors import EditRefused
from runtime.spend.config import SpendConfig
from store import Approval
from store import ApprovalState
from store import Batch
from store import RunStatus
from store import Store
from store.spend import SpendChange
from tests.conftest import Clock

LEAD = "U0LEAD"
APPROVER = "U0APPROVER"
POLICIES = {
    "default": {"approvers": [APPROVER], "allow_edit": True},
    "tools": {
        "issue_refund": {
            "rules": [
                {"when": "args.amount_cents <= 100000", "auto_approve": True, "label": "small"}
            ]
        },
        "refund_leads": {"approvers": [LEAD]},
    },
}


def runtime(
    store: Store,
    clock: Clock,
    limits: dict[str, Any] | None = None,
    policies: dict[str, Any] | None = None,
) -> Runtime:
    spend = SpendConfig.model_validate({"limits": limits or {"per_customer": PER_CUSTOMER}})
    return Runtime(
        store,
        [spend_agents.agent],
        policies=Policies.model_validate(policies or POLICIES),
        clock=clock,
        spend=spend,
    )


async def run(rt: Runtime, customer: str, order: str, cents: int) -> tuple[str, Approval]:
    run_id = await rt.start("refunds", refund(customer, order, cents), requested_by="U0ASKER")
    (approval,) = await rt.approvals(run_id)
    return run_id, approval


def line_of(approval: Approval) -> tuple[str, int, int, bool]:
    assert approval.rule is not None
    (state,) = approval.rule.limits
    return state.outcome, state.used, state.after, state.held


async def test_within_the_limit_a_call_holds_its_amount_and_past_it_is_asked(
    store: Store, clock: Clock, world: Path
) -> None:
    rt = runtime(store, clock)
    first, a = await run(rt, "c1", "o1", 30000)
    _second, b = await run(rt, "c1", "o2", 15000)
    third, c = await run(rt, "c1", "o3", 10000)  # 55000 > 50000: asked
    _other, d = await run(rt, "c2", "o4", 40000)  # another customer, another counter

    assert [a.state, b.state, c.state, d.state] == ["approved", "approved", "pending", "approved"]
    assert line_of(a) == ("within", 0, 30000, True)
    assert line_of(b) == ("within", 30000, 45000, True)
    assert line_of(c) == ("over", 45000, 55000, False)
    assert c.policy == "refund_leads"
    assert c.rule is not None
    assert c.rule.limit == "per_customer"
    assert "$550 of $500 for this customer in 30 days, after this refund" in c.rule.summary
    assert (await rt.get(third)).status == RunStatus.WAITING_APPROVAL
    assert spend_agents.refunded("c1") == 45000
    held = await store.holds_of_run(first)
    assert [(h["amount"], h["state"]) for h in held] == [(30000, "settled")]

    with pytest.raises(Exception, match="not an approver"):
        await rt.decide(c.id, "approved", by=APPROVER)
    await rt.decide(c.id, "approved", by=LEAD)  # a lead may go past it: held now
    assert (await rt.get(third)).status == RunStatus.DONE
    assert spend_agents.refunded("c1") == 55000
    (state,) = await rt.spend.now((await rt.approvals(third))[0].rule.limits)  # type: ignore[union-attr]
    assert state.used == 55000


async def test_a_declined_call_and_a_failed_one_give_their_amount_back(
    store: Store, clock: Clock, world: Path
) -> None:
    policies = {
        "default": {"approvers": [APPROVER]},
        "tools": {"refund_leads": {"approvers": [LEAD]}},
    }
    rt = runtime(store, clock, policies=policies)
    asked_run, asked = await run(rt, "c1", "o1", 30000)  # within: held while it waits
    assert asked.state == "pending"
    assert line_of(asked) == ("within", 0, 30000, True)
    _, waiting = await run(rt, "c1", "o2", 30000)  # 60000: past it while the first waits
    assert waiting.policy == "refund_leads"

    await rt.decide(asked.id, "declined", by=APPROVER, reason="no")
    assert await store.holds_of_run(asked_run) == []
    _, fits = await run(rt, "c1", "o3", 30000)  # the declined amount came back
    assert line_of(fits) == ("within", 0, 30000, True)

    failed_run, failing = await run(rt, "c2", "fail-1", 40000)
    await rt.decide(failing.id, "approved", by=APPROVER)
    assert (await rt.get(failed_run)).status == RunStatus.DONE  # the model was told
    assert await store.holds_of_run(failed_run) == []
    (state,) = await rt.spend.now(failing.rule.limits)  # type: ignore[union-attr]
    assert state.used == 0
    assert spend_agents.refunded("c2") == 0


async def test_a_rollback_gives_the_compensated_amount_back(
    store: Store, clock: Clock, world: Path
) -> None:
    rt = runtime(store, clock)
    run_id, approval = await run(rt, "c1", "o1", 45000)
    assert spend_agents.refunded("c1") == 45000

    report = await rt.rollback(run_id, to_step=0)

    assert report.compensated
    assert spend_agents.refunded("c1") == 0
    (state,) = await rt.spend.now(approval.rule.limits)  # type: ignore[union-attr]
    assert state.used == 0
    _, again = await run(rt, "c1", "o2", 45000)
    assert again.state == "approved"  # room again


async def test_a_denying_limit_declines_at_once_with_its_reason(
    store: Store, clock: Clock, world: Path
) -> None:
    limit = PER_CUSTOMER | {"ask": None, "deny": "one customer gets at most $500 a month"}
    rt = runtime(store, clock, limits={"per_customer": limit})
    await run(rt, "c1", "o1", 40000)
    run_id, denied = await run(rt, "c1", "o2", 20000)

    assert denied.state == "declined"
    assert denied.decided_by == "signoff"
    assert denied.reason == "one customer gets at most $500 a month"
    assert (await rt.get(run_id)).status == RunStatus.DONE
    assert spend_agents.refunded("c1") == 40000


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("args.tags.customer", "the call has no 'customer'"),
        ("args.customer_id + string(args.amount_cents / 0)", "failed"),
    ],
)
async def test_a_key_the_call_lacks_or_that_fails_asks_and_says_why(
    store: Store, clock: Clock, world: Path, key: str, why: str
) -> None:
    rt = runtime(store, clock, limits={"per_customer": PER_CUSTOMER | {"key": key}})
    run_id, asked = await run(rt, "c1", "o1", 100)  # a rule would approve it: the limit asks

    assert asked.state == "pending"
    assert asked.policy == "refund_leads"
    assert asked.rule is not None
    (state,) = asked.rule.limits
    assert state.outcome == "error"
    assert why in (state.error or "")
    assert "not counted, so asked" in asked.rule.summary
    assert why in asked.rule.summary
    assert spend_agents.refunded() == 0
    assert (await rt.get(run_id)).status == RunStatus.WAITING_APPROVAL


async def test_rules_read_what_a_limit_has_used(store: Store, clock: Clock, world: Path) -> None:
    policies = {
        "default": {"approvers": [APPROVER]},
        "tools": {
            "issue_refund": {
                "rules": [
                    {"when": "limits.per_customer.used > 30000", "required_approvals": 2},
                    {"when": "true", "auto_approve": True},
                ]
            },
            "refund_leads": {"approvers": [LEAD]},
        },
    }
    rt = runtime(store, clock, policies=policies)
    _, first = await run(rt, "c1", "o1", 30000)
    _, second = await run(rt, "c1", "o2", 1000)  # 31000 this month: two approvers

    assert first.state == "approved"
    assert second.state == "pending"
    assert second.required_approvals == 2


async def test_the_window_moves_with_the_clock_and_a_day_is_a_calendar_day(
    store: Store, clock: Clock, world: Path
) -> None:
    daily = PER_CUSTOMER | {"window": "day", "timezone": "America/New_York", "max": 1000}
    rt = runtime(store, clock, limits={"per_customer": PER_CUSTOMER, "daily": daily})
    clock.now = clock.now.replace(hour=3)  # 22:00 the day before in New York
    await run(rt, "c1", "o1", 1000)
    _, past_daily = await run(rt, "c1", "o2", 100)
    assert past_daily.state == "pending"
    assert past_daily.rule is not None
    assert past_daily.rule.limit == "daily"

    clock.advance(hours=2)  # midnight has passed in New York: a new day
    _, next_day = await run(rt, "c1", "o3", 1000)
    assert next_day.state == "approved"

    clock.advance(days=31, hours=1)  # a month on, the 30 days hold none of it
    _, later = await run(rt, "c1", "o4", 1000)
    assert later.state == "approved"
    assert line_of_named(later, "per_customer")[1] == 0


def line_of_named(approval: Approval, name: str) -> tuple[str, int]:
    assert approval.rule is not None
    found = next(s for s in approval.rule.limits if s.name == name)
    return found.outcome, found.used


async def test_a_tool_that_needs_no_approval_is_gated_by_its_limit(
    store: Store, clock: Clock, world: Path
) -> None:
    gifts = {
        "tools": ["send_gift"],
        "key": "run.requested_by",
        "max": 2,
        "window": "1h",
        "ask": "refund_leads",
    }
    rt = runtime(store, clock, limits={"gifts": gifts})
    who = {"requested_by": "U0ASKER"}
    ids = [
        await rt.start("refunds", task("send_gift", customer_id="c1", amount_cents=500), **who)
        for _ in range(3)
    ]
    approvals = [(await rt.approvals(i))[0] for i in ids]

    assert [a.state for a in approvals] == ["approved", "approved", "pending"]
    assert approvals[0].rule is not None
    assert approvals[0].rule.summary.startswith("needs no approval")
    assert [(await rt.get(i)).status for i in ids[:2]] == [RunStatus.DONE] * 2


async def test_an_edit_past_a_limit_the_call_was_within_is_refused(
    store: Store, clock: Clock, world: Path
) -> None:
    policies = {
        "default": {"approvers": [APPROVER], "allow_edit": True},
        "tools": {"refund_leads": {"approvers": [LEAD]}},
    }
    rt = runtime(store, clock, policies=policies)
    _, asked = await run(rt, "c1", "o1", 10000)
    args = dict(asked.args, amount_cents=60000)

    with pytest.raises(EditRefused, match="would pass limit per_customer"):
        await rt.decide(asked.id, "approved", by=APPROVER, args=args)
    assert (await rt.desk.get(asked.id)).state == ApprovalState.PENDING

    await rt.decide(asked.id, "approved", by=APPROVER, args=dict(asked.args, amount_cents=20000))
    (state,) = await rt.spend.now(asked.rule.limits)  # type: ignore[union-attr]
    assert state.used == 20000


async def test_cancelling_a_run_gives_back_what_its_waiting_call_held(
    store: Store, clock: Clock, world: Path
) -> None:
    policies = {"default": {"approvers": [APPROVER]}, "tools": {"refund_leads": {}}}
    rt = runtime(store, clock, policies=policies)
    run_id, asked = await run(rt, "c1", "o1", 30000)
    assert [h["state"] for h in await store.holds_of_run(run_id)] == ["held"]

    await rt.cancel(run_id, by=APPROVER)

    assert await store.holds_of_run(run_id) == []
    (state,) = await rt.spend.now(asked.rule.limits)  # type: ignore[union-attr]
    assert state.used == 0


@pytest.mark.parametrize("happened", [True, False])
async def test_an_effect_in_doubt_keeps_its_hold_until_a_person_says_what_happened(
    store: Store, clock: Clock, world: Path, happened: bool
) -> None:
    gifts = {"tools": ["send_gift"], "amount": "args.amount_cents", "max": 5000, "window": "1h"}
    rt = runtime(store, clock, limits={"gifts": gifts | {"ask": "refund_leads"}})
    run_id = await rt.start("refunds", task("send_gift", customer_id="slow", amount_cents=3000))
    assert (await rt.get(run_id)).stop_reason == "in_doubt"
    (effect,) = await store.list_effects(run_id)
    (approval,) = await rt.approvals(run_id)
    assert approval.rule is not None
    assert [h["state"] for h in await store.holds_of_run(run_id)] == ["held"]  # it may be spent

    await rt.resolve(run_id, effect.call_id, happened=happened, by=APPROVER)

    (state,) = await rt.spend.now(approval.rule.limits)
    assert state.used == (3000 if happened else 0)
    left = await store.holds_of_run(run_id)
    assert [h["state"] for h in left] == (["settled"] if happened else [])
    # A second word on the same call (a retry, a recovery) gives nothing back twice.
    await store.commit(Batch(run_id=run_id, spend=[SpendChange(effect.call_id, "release")]))
    await store.commit(Batch(run_id=run_id, spend=[SpendChange(effect.call_id, "release")]))
    (state,) = await rt.spend.now(approval.rule.limits)
    assert state.used == 0


class Shadows:
    """A telemetry that remembers the shadow decisions it was told of."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def model_step(self, *args: Any) -> None:
        return None

    def effect_ended(self, *args: Any) -> None:
        return None

    def leases_taken_over(self, count: int) -> None:
        return None

    def shadow_decision(self, kind: str, name: str, would: str) -> None:
        self.seen.append((kind, name, would))


async def test_a_limit_in_shadow_mode_decides_nothing_and_records_what_it_would_have(
    store: Store, clock: Clock, world: Path
) -> None:
    shadows = Shadows()
    limits = {"per_customer": PER_CUSTOMER | {"mode": "shadow"}}
    rt = Runtime(
        store,
        [spend_agents.agent],
        policies=Policies.model_validate(POLICIES),
        clock=clock,
        spend=SpendConfig.model_validate({"limits": limits}),
        telemetry=shadows,
    )
    await run(rt, "c1", "o1", 40000)
    run_id, past = await run(rt, "c1", "o2", 20000)  # 60000: enforced, it would ask

    assert past.state == "approved"  # decided as if the limit were not there
    assert (await rt.get(run_id)).status == RunStatus.DONE
    assert spend_agents.refunded("c1") == 60000
    assert past.rule is not None
    (note,) = past.rule.shadow
    assert (note.kind, note.name, note.would) == ("limit", "per_customer", "ask")
    assert "$600 of $500 for this customer" in note.text
    assert shadows.seen == [("limit", "per_customer", "ask")]
    events = [e for e in await store.list_events(run_id=run_id) if e.action == "shadow_decision"]
    assert [(e.approval_id, e.detail["name"], e.detail["would"]) for e in events] == [
        (past.id, "per_customer", "ask")
    ]
    (state,) = await rt.spend.now(past.rule.limits)
    assert state.used == 60000  # it counts as it would, to say what it would have done


async def test_a_limit_changed_counts_new_calls_by_its_new_terms_and_is_audited(
    store: Store, clock: Clock, world: Path
) -> None:
    rt = runtime(store, clock)
    await run(rt, "c1", "o1", 40000)
    raised = runtime(store, clock, limits={"per_customer": PER_CUSTOMER | {"max": 100000}})
    _, fits = await run(raised, "c1", "o2", 40000)  # 80000: within the new $1,000
    assert fits.state == "approved"
    again = runtime(store, clock, limits={"per_customer": PER_CUSTOMER | {"max": 100000}})
    await run(again, "c1", "o3", 100)  # the same terms again: nothing new to audit

    changes = [e for e in await store.list_audit() if e.action == "limit_changed"]
    assert [e.detail.get("was", {}).get("max") for e in changes] == [None, 50000]
    assert [e.detail["now"]["max"] for e in changes] == [50000, 100000]


async def test_a_rule_and_an_envelope_in_shadow_mode_decide_nothing_and_record_it(
    store: Store, clock: Clock, world: Path
) -> None:
    """A shadow rule that would approve small refunds, and an envelope handed out while
    `[envelopes] mode = "shadow"`: each refund still asks a person, and each says (on its
    match, in the audit trail and to telemetry) what they would have done."""
    shadows = Shadows()
    policies = {
        "default": {"approvers": [APPROVER]},
        "tools": {
            "issue_refund": {
                "rules": [
                    {"when": "args.amount_cents <= 1000", "auto_approve": True, "mode": "shadow"}
                ]
            }
        },
    }
    rt = Runtime(
        store,
        [spend_agents.agent],
        policies=Policies.model_validate(policies),
        clock=clock,
        spend=SpendConfig.model_validate({"envelopes": {"mode": "shadow"}}),
        telemetry=shadows,
    )
    envelope = await rt.spend.make(
        "issue_refund", "true", author=APPROVER, reason="backlog", max_calls=5
    )
    assert envelope.mode == "shadow"
    run_id, small = await run(rt, "c1", "o1", 500)
    _, large = await run(rt, "c1", "o2", 5000)

    assert [small.state, large.state] == ["pending", "pending"]  # nothing approved them
    assert (await rt.get(run_id)).status == RunStatus.WAITING_APPROVAL
    assert spend_agents.refunded("c1") == 0
    assert small.rule is not None
    assert large.rule is not None
    assert [(n.kind, n.would) for n in small.rule.shadow] == [
        ("rule", "approve"),
        ("envelope", "approve"),
    ]
    assert [(n.kind, n.would) for n in large.rule.shadow] == [("envelope", "approve")]
    assert sorted(shadows.seen) == [
        ("envelope", envelope.id, "approve"),
        ("envelope", envelope.id, "approve"),
        ("rule", "rule 1", "approve"),
    ]
    events = [e for e in await store.list_events() if e.action == "shadow_decision"]
    assert len(events) == 3
    assert (await rt.spend.get(envelope.id)).used_calls == 2  # it counts what it would use
