"""Effects two runs share are known (issue 40.2), with the refund example: run B's refund of
order E1 is run A's (same key, same arguments: the provider refunds once). B relies on it,
recorded with an audit event. Rolling A back without saying so explicitly is refused, naming
B, and changes nothing; with `compensate_shared`, the refund is reversed, on-call is paged,
and B is marked (its timeline) and told (its thread's outbox row). A cancel that would
compensate an effect in flight that another run relies on is refused the same way, and a
saga nobody asked to touch it pages instead."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from approvals_conftest_helpers import APPROVER
from approvals_conftest_helpers import REQUESTER

from examples import world as example_world
from examples.refund_agent import agent as refund_agent
from runtime import Agent
from runtime import Message
from runtime import Runtime
from runtime import ScriptedModel
from runtime import errors
from runtime import tool
from runtime import tool_call
from runtime.model import Entry
from store import RunStatus
from store import Store

TASK = "Refund order E1"


async def refunded(rt: Runtime, run_id: str, by: str = REQUESTER) -> str:
    """Run `run_id` refunds order E1, approved: done."""
    await rt.start("refund-agent", TASK, run_id=run_id, requested_by=by)
    [asked] = await rt.approvals(run_id)
    await rt.decide(asked.id, "approved", by=APPROVER)
    assert (await rt.get(run_id)).status == RunStatus.DONE
    return asked.call_id or ""


async def snapshot(rt: Runtime, store: Store) -> tuple[Any, ...]:
    """Everything a refused rollback must leave as it was."""
    return (
        example_world.payments(),
        await rt.get("A"),
        len(await rt.history("A")),
        [e.action for e in await store.list_events(run_id="A")],
        [e.action for e in await store.list_events(run_id="B")],
        await store.list_pages(open_only=False),
        await store.list_effects("A"),
    )


@pytest.fixture
async def shared_refund(
    make_runtime: Callable[..., Runtime], store: Store, world: Path
) -> tuple[Runtime, str, str]:
    """A refunded order E1; B refunded it again, the same refund: the provider's one."""
    rt = make_runtime([refund_agent])
    a_call = await refunded(rt, "A")
    b_call = await refunded(rt, "B", by="U0OTHER")
    return rt, a_call, b_call


async def test_a_run_handed_another_runs_refund_relies_on_it_on_the_record(
    shared_refund: tuple[Runtime, str, str], store: Store
) -> None:
    rt, a_call, b_call = shared_refund

    refunds = [p for p in example_world.payments() if p[0] == "refund"]
    assert len(refunds) == 1  # one refund at the provider, both runs told it is theirs
    [reuse] = await store.effect_group("A", a_call)
    assert (reuse.run_id, reuse.call_id, reuse.from_run_id, reuse.from_call_id) == (
        "B",
        b_call,
        "A",
        a_call,
    )
    # (the restocking fee's charge too: the invoice's key, the same amount)
    reused = [e for e in await store.list_events(run_id="B") if e.action == "effect_reused"]
    assert sorted(e.detail["tool"] for e in reused) == ["charge", "issue_refund"]
    [event] = [e for e in reused if e.detail["tool"] == "issue_refund"]
    assert event.detail == {
        "call_id": b_call,
        "tool": "issue_refund",
        "from_run": "A",
        "from_call": a_call,
        "idempotency_key": reuse.idempotency_key,
    }
    refund_of = {e.call_id: e for e in await store.list_effects("A") if e.tool == "issue_refund"}
    assert await rt.relying_on(refund_of.values()) == {a_call: ["B"]}
    b_refund = [e for e in await store.list_effects("B") if e.tool == "issue_refund"]
    assert await rt.relying_on(b_refund) == {b_call: ["A"]}  # undoing either undoes both


async def test_rolling_back_a_shared_refund_is_refused_and_changes_nothing(
    shared_refund: tuple[Runtime, str, str], store: Store
) -> None:
    rt, a_call, b_call = shared_refund
    before = await snapshot(rt, store)

    with pytest.raises(errors.SharedEffect) as refused:
        await rt.rollback("A", 1, by="U0OPS")

    assert refused.value.shared == {a_call: [("B", b_call)]}
    said = str(refused.value)
    assert f"issue_refund (call {a_call}) is relied on by run B (call {b_call})" in said
    assert "nothing changed" in said
    assert "--compensate-shared" in said
    assert await snapshot(rt, store) == before


async def test_with_the_explicit_choice_it_is_compensated_paged_and_b_is_marked(
    shared_refund: tuple[Runtime, str, str], store: Store
) -> None:
    rt, a_call, b_call = shared_refund

    report = await rt.rollback("A", 1, by="U0OPS", compensate_shared=True)

    assert a_call in report.compensated
    assert report.shared == {a_call: ["B"]}
    reversal = [p for p in example_world.payments() if p[0] == "refund_reversal"]
    assert len(reversal) == 1
    [page] = [p for p in await store.list_pages() if p.reason == "shared_undone"]
    assert (page.run_id, page.call_id, page.tool) == ("A", a_call, "issue_refund")
    assert "by U0OPS's explicit choice" in page.detail
    assert f"run B (call {b_call})" in page.detail
    [mark] = [
        e for e in await store.list_events(run_id="B") if e.action == "relied_on_effect_undone"
    ]
    assert mark.actor == "U0OPS"
    assert mark.detail == {
        "call_id": b_call,
        "tool": "issue_refund",
        "by_run": "A",
        "by_call": a_call,
        "compensation": f"undo:{a_call}",
    }
    rollback = [e for e in await store.list_events(run_id="A") if e.action == "rollback"][-1]
    assert rollback.detail["shared"] == {a_call: ["B"]}
    [undo] = [e for e in await store.list_events(run_id="A") if e.action == "undo_started"]
    assert undo.detail["compensate_shared"] is True  # recovery finishes it with the same choice
    [reuse] = await store.effect_group("A", a_call)
    assert reuse.undone_at is not None  # B was told once


async def test_a_fork_handed_its_parents_refund_relies_on_it_too(
    make_runtime: Callable[..., Runtime], store: Store, world: Path
) -> None:
    rt = make_runtime([refund_agent])
    a_call = await refunded(rt, "A")
    fork = await rt.fork("A", 1)  # the refund again: the ledger hands it the parent's

    assert [(r.run_id, r.from_run_id, r.tool) for r in await store.effect_group("A", a_call)] == [
        (fork, "A", "issue_refund")
    ]
    with pytest.raises(errors.SharedEffect, match=f"relied on by run {fork}"):
        await rt.rollback("A", 1)


# cancel with compensation, and the saga


HELD: dict[str, asyncio.Event] = {}


@tool(
    description="Book a room (by its name: the hotel dedupes by the key).",
    effect="reversible",
    compensate="unbook",
    requires_approval=False,
    idempotency_key=lambda args: f"room:{args['room']}",
)
async def book(room: str) -> dict[str, str]:
    await HELD.setdefault(room, asyncio.Event()).wait()
    return {"booked": room}


@tool(description="Give a room back.", effect="irreversible", requires_approval=False)
async def unbook(room: str) -> dict[str, str]:
    return {"freed": room}


def book_the_room(messages: Sequence[Message]) -> Entry:
    if any(m.role == "tool" for m in messages):
        return "Booked."
    return tool_call("book", {"room": "R1"})


BOOKER = Agent("booker", model=ScriptedModel(book_the_room), tools=[book, unbook])


async def test_a_cancel_that_would_compensate_a_shared_effect_in_flight_is_refused(
    make_runtime: Callable[..., Runtime], store: Store
) -> None:
    HELD.clear()
    rt = make_runtime([BOOKER])
    first = asyncio.create_task(rt.start("booker", "Book R1", run_id="A"))
    await _until(lambda: _started(store, "A"))
    second = asyncio.create_task(rt.start("booker", "Book R1", run_id="B"))
    await _until(lambda: _started(store, "B"))  # the hotel's booking, under one key

    with pytest.raises(errors.SharedEffect, match="relied on by run B"):
        await rt.cancel("A", by="U0OPS", wait=False, compensate=True)
    assert (await rt.get("A")).status == RunStatus.RUNNING  # nothing changed

    await rt.cancel("A", by="U0OPS", wait=False, compensate=True, compensate_shared=True)
    HELD["R1"].set()
    await asyncio.gather(first, second)
    await _until(lambda: _compensated(store, "A"))
    [page] = [p for p in await store.list_pages() if p.reason == "shared_undone"]
    assert page.run_id == "A"
    marks = [
        e for e in await store.list_events(run_id="B") if e.action == "relied_on_effect_undone"
    ]
    assert [m.actor for m in marks] == ["U0OPS"]


async def _started(store: Store, run_id: str) -> bool:
    return bool(await store.list_effects(run_id))


async def _compensated(store: Store, run_id: str) -> bool:
    return any(e.compensated_by for e in await store.list_effects(run_id))


async def _until(check: Callable[[], Any], within: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, "not in time"
        await asyncio.sleep(0.02)
