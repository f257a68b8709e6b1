"""The example refund agent is one a finance team could ship: the restocking fee is approved
on the refund's card (and can be edited there), and its answer says what really happened."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from support.refunds import park_refund

from examples import world as example_world
from examples.refund_agent import _answer
from examples.refund_agent import agent as refund_agent
from runtime import Runtime
from runtime.approvals.policy import Policies
from runtime.approvals.policy import Policy

ORDER_WITH_FEE = "1001"  # the example world charges a 500-cent restocking fee on it
EDITABLE = Policy(allow_edit=True)


async def test_the_fee_is_on_the_refunds_approval_and_charged_as_approved(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([refund_agent])
    _, approval = await park_refund(rt, ORDER_WITH_FEE)

    assert approval.args["restocking_fee_cents"] == 500
    await rt.decide(approval.id, "approved", by="U0BOB")

    charges = [p for p in example_world.payments() if p[0] == "charge"]
    assert [(kind, ref, cents) for kind, ref, cents, _ in charges] == [("charge", "INV-1001", 500)]


async def test_an_approver_who_waives_the_fee_means_no_charge(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([refund_agent], policies=Policies(tools={"issue_refund": EDITABLE}))
    run_id, approval = await park_refund(rt, ORDER_WITH_FEE)
    waived = {**approval.args, "restocking_fee_cents": 0}

    await rt.decide(approval.id, "approved", by="U0BOB", args=waived)

    assert (await rt.get(run_id)).status == "done"
    assert [p[0] for p in example_world.payments()] == ["refund"]
    answer = (await rt.store.load_state(run_id)).messages[-1].content
    assert "restocking fee" not in answer


def test_the_answer_says_when_the_customer_was_not_told() -> None:
    refund = {"amount_cents": 6033, "restocking_fee_cents": 0}
    not_sent = {"executed": False, "reason": "resolved as not sent by U0OPS"}

    answer = _answer("1001", refund, {"issue_refund": refund, "send_email": not_sent})

    assert "could NOT e-mail the customer" in answer
    assert "told the customer" not in answer


async def test_a_request_and_a_run_end_each_leave_one_log_line(
    make_runtime: Callable[..., Runtime], world: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="signoff")
    rt = make_runtime([refund_agent])
    run_id, approval = await park_refund(rt, ORDER_WITH_FEE)
    await rt.decide(approval.id, "approved", by="U0BOB")

    lines = [r.getMessage() for r in caplog.records]
    assert sum(f"approval {approval.id} requested: issue_refund" in m for m in lines) == 1
    assert sum(m.startswith(f"run {run_id} done at step") for m in lines) == 1


async def test_a_dry_run_fork_tells_what_would_have_happened_not_a_decline(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([refund_agent])
    run_id, approval = await park_refund(rt, ORDER_WITH_FEE)
    await rt.decide(approval.id, "approved", by="U0BOB")
    payments, emails = example_world.payments(), example_world.emails()

    fork_id = await rt.fork(run_id, from_step=1, dry_run=True)

    state = await rt.store.load_state(fork_id)
    answer = state.messages[-1].content
    assert answer.startswith("Dry run: I would have refunded order 1001"), answer
    assert "charged the restocking fee and e-mailed the customer" in answer
    assert "nothing was done" in answer
    assert "not made" not in answer  # not told as a decline
    emailed = [json.loads(m.content) for m in state.messages if m.name == "send_email"]
    assert emailed[-1]["args"]["subject"] == "Your refund for order 1001"  # as a refund's
    assert (example_world.payments(), example_world.emails()) == (payments, emails)
