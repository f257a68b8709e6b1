"""Issue 25: what a person approved is exactly what runs, once (docs/architecture.md rule 2, "a key
is bound to its arguments"), with the refund example on every store backend.

- two runs refunding one order with other amounts: one refund at the provider; the second
  run's approval names the first; a plain approval is refused; declining ends it truthfully;
  approving it as separate makes exactly one more refund, with the approved amount;
- an edit: the provider gets the edited amount, the ledger and the audit keep both;
- a tampered approval (stored arguments changed) refuses to run and pages, naming digests;
- the same key with the same arguments (a retry, a resume, a fork) is the recorded result.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from support.pg_support import postgres

from examples import world as example_world
from examples.refund_agent import agent as refund_agent
from runtime import Agent
from runtime import Runtime
from runtime import ScriptedModel
from runtime import ToolContext
from runtime import errors
from runtime import tool
from runtime import tool_call
from runtime.approvals.policy import Policies
from runtime.approvals.policy import Policy
from store import Approval
from store import ApprovalState
from store import Store
from store.digest import args_digest

ORDER = "4471"  # no restocking fee: a refund, then an e-mail
ASK_25 = f"Refund order {ORDER} for $25"
ASK_20 = f"Refund order {ORDER} for $20"
EDITABLE = Policies(tools={"issue_refund": Policy(allow_edit=True)})


def refunds() -> list[tuple[str, int, str]]:
    """(order, amount, key) of every refund the provider made."""
    return [
        (ref, cents, key) for kind, ref, cents, key in example_world.payments() if kind == "refund"
    ]


async def answer(rt: Runtime, run_id: str) -> str:
    return (await rt.store.load_state(run_id)).messages[-1].content


async def ask(rt: Runtime, task: str, run_id: str) -> Approval:
    """Start the refund agent on `task` as run `run_id`: the approval its refund waits on."""
    await rt.start("refund-agent", task, run_id=run_id, requested_by="U0REQ")
    [asked] = await rt.approvals(run_id)
    return asked


async def refunded_by_a(rt: Runtime) -> str:
    asked = await ask(rt, ASK_25, "run-a")
    await rt.decide(asked.id, "approved", by="U0ALICE")
    assert (await rt.get("run-a")).status == "done"
    return "run-a"


async def asked_again_after_a(rt: Runtime) -> tuple[str, str, Approval]:
    """Run A refunded $25 (`refunded_by_a`), then run C asks $20 for the same order: A, C and
    C's approval, which names A's refund as its conflict."""
    first = await refunded_by_a(rt)
    return first, "run-c", await ask(rt, ASK_20, "run-c")


async def test_a_second_refund_for_another_amount_is_a_conflict_and_a_plain_approval_is_refused(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([refund_agent])
    first, second, asked = await asked_again_after_a(rt)

    assert (await rt.get(second)).status == "waiting_approval"
    assert asked.conflict is not None
    assert (asked.conflict.run_id, asked.conflict.approved_by) == (first, "U0ALICE")
    assert asked.conflict.args["amount_cents"] == 2500
    with pytest.raises(errors.KeyConflict) as refused:
        await rt.decide(asked.id, "approved", by="U0BOB")
    said = str(refused.value)
    assert "amount_cents 2500 by run run-a (approved by U0ALICE" in said
    assert "this run asks amount_cents 2000" in said
    assert "approve it as a separate issue_refund" in said
    assert (await rt.store.get_approval(asked.id)).state == ApprovalState.PENDING  # unchanged
    assert [cents for _, cents, _ in refunds()] == [2500]


async def test_declining_the_conflict_ends_the_run_truthfully(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([refund_agent])
    _, second, asked = await asked_again_after_a(rt)

    await rt.decide(asked.id, "declined", by="U0BOB", reason="already refunded")

    assert (await rt.get(second)).status == "done"
    assert f"The refund for order {ORDER} was not made" in await answer(rt, second)
    assert [cents for _, cents, _ in refunds()] == [2500]
    assert [e.tool for e in await rt.store.list_effects(second)] == ["lookup_order", "send_email"]


async def test_approving_the_conflict_as_separate_makes_exactly_one_more_refund(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([refund_agent])
    first, second, asked = await asked_again_after_a(rt)

    decided = await rt.decide(asked.id, "approved", by="U0BOB", separate=True)

    assert decided.key_suffix == asked.id
    assert (await rt.get(second)).status == "done"
    assert "Refunded order 4471 (2000 cents)" in await answer(rt, second)
    made = refunds()
    assert [cents for _, cents, _ in made] == [2500, 2000]
    assert made[1][2].endswith(f"~separate:{asked.id}")
    # The ledger and the provider agree on every amount and key.
    ledger = [
        (e.args["amount_cents"], e.idempotency_key, e.result["amount_cents"])
        for run_id in (first, second)
        for e in await rt.store.list_effects(run_id)
        if e.tool == "issue_refund"
    ]
    assert ledger == [(cents, key, cents) for _, cents, key in made]
    [event] = [
        e for e in await rt.store.list_events(run_id=second) if e.action == "approval_approved"
    ]
    assert event.actor == "U0BOB"
    assert event.detail["separate"]["key_suffix"] == asked.id
    assert event.detail["separate"]["conflict"]["run_id"] == first
    # A retried request and a resume of either run change nothing.
    await rt.start("refund-agent", ASK_20, run_id="run-c", requested_by="U0REQ")
    await rt.start("refund-agent", ASK_25, run_id="run-a", requested_by="U0REQ")
    assert refunds() == made


async def test_separate_is_refused_where_nothing_conflicts_and_on_a_decline(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([refund_agent])
    asked = await ask(rt, ASK_25, "run-a")

    with pytest.raises(errors.InvalidRequest, match="nothing to be separate from"):
        await rt.decide(asked.id, "approved", by="U0BOB", separate=True)
    with pytest.raises(errors.InvalidRequest, match="only an approval can be separate"):
        await rt.decide(asked.id, "declined", by="U0BOB", separate=True)

    assert (await rt.store.get_approval(asked.id)).state == ApprovalState.PENDING
    assert refunds() == []


async def test_an_edit_runs_the_edited_amount_and_keeps_both(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([refund_agent], policies=EDITABLE)
    run_id = "run-e"
    asked = await ask(rt, ASK_25, run_id)
    edited = {**asked.args, "amount_cents": 2000}

    decided = await rt.decide(asked.id, "approved", by="U0BOB", args=edited)

    assert decided.edited
    assert (decided.args_digest, decided.approved_digest) == (
        args_digest(asked.args),
        args_digest(edited),
    )
    assert [cents for _, cents, _ in refunds()] == [2000]
    [refund] = [e for e in await rt.store.list_effects(run_id) if e.tool == "issue_refund"]
    assert (refund.args["amount_cents"], refund.result["amount_cents"]) == (2000, 2000)
    assert (refund.args_digest, refund.asked_digest) == (
        args_digest(edited),
        args_digest(asked.args),
    )
    [event] = [
        e for e in await rt.store.list_events(run_id=run_id) if e.action == "approval_approved"
    ]
    assert event.detail["edited"] == {"amount_cents": {"proposed": 2500, "approved": 2000}}
    assert "Refunded order 4471 (2000 cents)" in await answer(rt, run_id)

    # A fork re-issues the proposal (2500) the person decided: the recorded result, no refund.
    fork = await rt.fork(run_id, from_step=1)
    assert (await rt.get(fork)).status == "done"
    assert await rt.approvals(fork) == []
    assert [cents for _, cents, _ in refunds()] == [2000]


async def test_an_edit_that_changes_what_the_call_acts_on_is_refused(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([refund_agent], policies=EDITABLE)
    asked = await ask(rt, ASK_25, "run-e")

    with pytest.raises(errors.EditRefused, match=r"changes what issue_refund acts on \(order_id"):
        await rt.decide(asked.id, "approved", by="U0BOB", args={**asked.args, "order_id": "1002"})

    assert (await rt.store.get_approval(asked.id)).state == ApprovalState.PENDING
    assert refunds() == []


async def tamper(store: Store, statement: str) -> None:
    """Change a row behind Signoff's back, as a person with database access could."""
    if store.url.startswith("postgresql"):
        await postgres(statement, store.url)
        return
    with closing(sqlite3.connect(store.url.removeprefix("sqlite:///"))) as conn:
        conn.execute(statement)
        conn.commit()


async def test_an_approval_whose_stored_args_were_changed_refuses_to_run_and_pages(
    make_runtime: Callable[..., Runtime], store: Store, world: Path
) -> None:
    if store.url == "sqlite://:memory:":
        pytest.skip("nothing outside the process can change an in-memory database")
    rt = make_runtime([refund_agent], policies=EDITABLE)
    run_id = "run-t"
    asked = await ask(rt, ASK_25, run_id)
    edited = {**asked.args, "amount_cents": 2000}
    decided = await rt.decide(asked.id, "approved", by="U0BOB", args=edited, resume=False)
    forged = '{"order_id": "4471", "amount_cents": 4000, "restocking_fee_cents": 0}'
    await tamper(store, f"UPDATE approvals SET approved_args = '{forged}' WHERE id = '{asked.id}'")

    await rt.resume(run_id)

    run = await rt.get(run_id)
    assert (run.status, run.stop_reason) == ("failed", "args_mismatch")
    assert refunds() == []
    [page] = [p for p in await rt.store.list_pages() if p.run_id == run_id]
    assert page.reason == "args_mismatch"
    assert decided.approved_digest is not None
    assert decided.approved_digest in page.detail
    assert args_digest({**edited, "amount_cents": 4000}) in page.detail
    assert [e.tool for e in await rt.store.list_effects(run_id)] == ["lookup_order"]


async def test_the_same_order_and_amount_again_is_the_same_refund(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([refund_agent])
    await refunded_by_a(rt)

    again = "run-b"
    asked = await ask(rt, ASK_25, again)
    assert asked.conflict is None
    assert asked.duplicate_of == "run-a"
    await rt.decide(asked.id, "approved", by="U0BOB")

    assert (await rt.get(again)).status == "done"
    assert [cents for _, cents, _ in refunds()] == [2500]  # the provider's replay of one key


@pytest.mark.parametrize("then", ["declined", "separate"])
async def test_two_approvals_decided_before_either_ran_park_the_second_on_the_conflict(
    make_runtime: Callable[..., Runtime], world: Path, then: str
) -> None:
    rt = make_runtime([refund_agent])
    first = await rt.start("refund-agent", ASK_25, run_id="run-a", requested_by="U0REQ")
    second = await rt.start("refund-agent", ASK_20, run_id="run-c", requested_by="U0REQ")
    [asked_a] = await rt.approvals(first)
    [asked_c] = await rt.approvals(second)
    assert asked_c.conflict is None  # nothing had run under the key when it was asked
    await rt.decide(asked_a.id, "approved", by="U0ALICE", resume=False)
    await rt.decide(asked_c.id, "approved", by="U0BOB", resume=False)

    await rt.resume(first)
    await rt.resume(second)

    # The tool did not run: the run waits on a new approval that shows the conflict.
    assert [cents for _, cents, _ in refunds()] == [2500]
    assert (await rt.get(second)).status == "waiting_approval"
    [again] = await rt.approvals(second, state=ApprovalState.PENDING)
    assert again.conflict is not None
    assert (again.conflict.run_id, again.conflict.approved_by) == (first, "U0ALICE")
    assert [e.tool for e in await rt.store.list_effects(second)] == ["lookup_order"]
    with pytest.raises(errors.KeyConflict):
        await rt.decide(again.id, "approved", by="U0BOB")
    if then == "declined":
        await rt.decide(again.id, "declined", by="U0BOB", reason="already refunded")
        assert f"The refund for order {ORDER} was not made" in await answer(rt, second)
        assert [cents for _, cents, _ in refunds()] == [2500]
    else:
        await rt.decide(again.id, "approved", by="U0BOB", separate=True)
        assert "Refunded order 4471 (2000 cents)" in await answer(rt, second)
        assert [cents for _, cents, _ in refunds()] == [2500, 2000]
        [refund] = [e for e in await rt.store.list_effects(second) if e.tool == "issue_refund"]
        assert refund.approval_id == again.id
    assert (await rt.get(second)).status == "done"
    await rt.start("refund-agent", ASK_20, run_id="run-c", requested_by="U0REQ")  # a retry
    assert len(refunds()) == (1 if then == "declined" else 2)


charged: list[tuple[str, int, str]] = []


@tool(
    description="Charge a customer.",
    effect="irreversible",
    requires_approval=False,
    idempotency_key=lambda args: f"charge:{args['customer']}",
)
async def charge_card(customer: str, cents: int, *, ctx: ToolContext) -> dict[str, Any]:
    charged.append((customer, cents, ctx.idempotency_key))
    return {"charged": cents}


def charger(cents: int) -> Agent:
    replies: list[Any] = [tool_call("charge_card", {"customer": "c1", "cents": cents}), "Done."]
    return Agent(f"charger-{cents}", model=ScriptedModel(replies), tools=[charge_card])


async def test_a_call_no_one_approves_that_conflicts_parks_for_a_person(
    make_runtime: Callable[..., Runtime],
) -> None:
    charged.clear()
    rt = make_runtime([charger(100), charger(200)])
    await rt.start("charger-100", "Charge c1 1.00", run_id="run-1")
    second = await rt.start("charger-200", "Charge c1 2.00", run_id="run-2")

    assert [c[:2] for c in charged] == [("c1", 100)]
    assert (await rt.get(second)).status == "waiting_approval"
    [asked] = await rt.approvals(second)
    assert asked.conflict is not None
    assert asked.conflict.args == {"customer": "c1", "cents": 100}
    await rt.decide(asked.id, "approved", by="U0BOB", separate=True)

    assert (await rt.get(second)).status == "done"
    assert [c[:2] for c in charged] == [("c1", 100), ("c1", 200)]
    assert charged[1][2].endswith(f"~separate:{asked.id}")
