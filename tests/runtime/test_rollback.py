"""One job, long because each kind of effect undoes its own way: rollback.

Rollback and the saga (issue 5, runtime side; docs/architecture.md rule 6): compensate what can
be undone, page a human for the rest, restore the state as a new checkpoint, and survive being
killed."""

from __future__ import annotations

import asyncio
import os
import random
import sys
from collections import Counter
from collections.abc import Awaitable
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any
from typing import cast

import pytest
from approvals_conftest_helpers import APPROVER
from approvals_conftest_helpers import REQUESTER
from approvals_conftest_helpers import RecordingNotifier
from approvals_conftest_helpers import history_around_rollback
from approvals_conftest_helpers import hold
from approvals_conftest_helpers import invocations
from approvals_conftest_helpers import refund_run
from approvals_conftest_helpers import release
from approvals_conftest_helpers import reserve
from approvals_conftest_helpers import settled
from approvals_conftest_helpers import stock_agent
from approvals_conftest_helpers import tool_messages
from approvals_conftest_helpers import unhold
from approvals_conftest_helpers import wire_money
from support.wrapped_store import WrappedStore

from examples import world as example_world
from examples.refund_agent import agent as refund_agent
from runtime import Agent
from runtime import Runtime
from runtime import ScriptedModel
from runtime import ToolContext
from runtime import errors
from runtime import tool
from runtime import tool_call
from store import ApprovalState
from store import Batch
from store import Committed
from store import EffectStatus
from store import RunStatus
from store import Store
from store import errors as store_errors

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).parent / "workers" / "rollback_worker.py"
WORKER_ID = "rb-worker"
ITEMS = ["apples", "bread", "cheese", "dates", "eggs", "figs"]


def reversals() -> list[tuple[str, str, int, str]]:
    return [p for p in example_world.payments() if p[0] == "refund_reversal"]


# what a rollback does


async def test_rollback_compensates_the_refund_and_pages_email_and_charge(
    refund_done: tuple[Runtime, str], notifier: RecordingNotifier
) -> None:
    rt, run_id = refund_done

    report = await rt.rollback(run_id, to_step=0)

    assert report.compensated == ["call_2_1"]
    assert report.paged == ["call_4_1", "call_3_1"]
    assert report.skipped == ["call_1_1"]
    (reversal,) = reversals()
    assert reversal[1:3] == ("1001", -6033)
    pages = {p.call_id: p for p in await rt.store.list_pages()}
    assert {c: p.reason for c, p in pages.items()} == {
        "call_3_1": "uncompensatable",
        "call_4_1": "uncompensatable",
    }
    assert sorted(p.call_id or "" for p in notifier.pages) == ["call_3_1", "call_4_1"]
    assert len(example_world.emails()) == 1
    assert [p[0] for p in example_world.payments()].count("charge") == 1


async def test_compensation_is_an_effect_with_its_own_key(refund_done: tuple[Runtime, str]) -> None:
    rt, run_id = refund_done

    await rt.rollback(run_id, to_step=0)

    refund = await rt.store.get_effect(run_id, "call_2_1")
    (undo,) = [e for e in await rt.store.list_effects(run_id) if e.compensates == "call_2_1"]
    assert refund.compensated_by == undo.call_id
    assert undo.tool == "reverse_refund"
    assert undo.status == EffectStatus.COMPLETED
    # The compensator takes back what was refunded: the refund's own arguments that it names.
    assert undo.args == {
        "order_id": refund.args["order_id"],
        "amount_cents": refund.args["amount_cents"],
    }
    assert undo.idempotency_key != refund.idempotency_key
    assert reversals()[0][3] == undo.idempotency_key
    assert [e.tool for e in await rt.effects_after(run_id, 0)] == ["charge", "send_email"]


async def test_rollback_appends_a_restore_snapshot_and_keeps_history(
    refund_done: tuple[Runtime, str],
) -> None:
    rt, run_id = refund_done
    before, after = await history_around_rollback(rt, run_id, to_step=2)

    kept = after[: len(before)]
    assert [c.model_copy(update={"rolled_back": False}) for c in kept] == before
    assert [c.rolled_back for c in kept] == [c.step > 2 for c in before]
    (restore,) = after[len(before) :]
    assert not restore.rolled_back
    assert restore.snapshot is True
    assert restore.step == 2
    assert restore.stop_reason == "rolled_back"
    assert restore.usage == before[-1].usage
    events = [e for e in await rt.store.list_events(run_id=run_id) if e.action == "rollback"]
    assert events[0].detail["paged"] == ["call_4_1", "call_3_1"]


@pytest.mark.parametrize("to_step", [0, 1, 2, 4])
async def test_state_after_rollback_is_the_state_at_that_step(
    refund_done: tuple[Runtime, str], to_step: int
) -> None:
    rt, run_id = refund_done
    wanted = await rt.state_at(run_id, to_step)

    await rt.rollback(run_id, to_step=to_step)

    now = await rt.store.load_state(run_id)
    assert now.messages == wanted.messages
    assert now.step == to_step
    run = await rt.get(run_id)
    assert run.step == to_step
    assert run.status == RunStatus.FAILED
    assert run.stop_reason == "rolled_back"


async def test_rollback_to_a_later_step_leaves_earlier_effects_alone(
    refund_done: tuple[Runtime, str],
) -> None:
    rt, run_id = refund_done

    report = await rt.rollback(run_id, to_step=2)

    assert report.compensated == []
    assert report.paged == ["call_4_1", "call_3_1"]
    assert report.skipped == []
    assert reversals() == []
    assert (await rt.store.get_effect(run_id, "call_2_1")).compensated_by is None


async def test_rollback_run_twice_compensates_once(refund_done: tuple[Runtime, str]) -> None:
    rt, run_id = refund_done

    first = await rt.rollback(run_id, to_step=0)
    second = await rt.rollback(run_id, to_step=0)

    assert len(reversals()) == 1
    assert first.compensated == ["call_2_1"]
    assert (second.compensated, second.paged, second.nothing_to_do is not None) == ([], [], True)
    undos = [e for e in await rt.store.list_effects(run_id) if e.compensates is not None]
    assert len(undos) == 1
    assert len(await rt.store.list_pages()) == 2


async def test_rollback_of_an_unknown_run_or_step_changes_nothing(
    refund_done: tuple[Runtime, str],
) -> None:
    rt, run_id = refund_done
    history = await rt.history(run_id)

    with pytest.raises(errors.RunNotFound):
        await rt.rollback("run-nope", to_step=0)
    with pytest.raises(errors.InvalidRequest):
        await rt.rollback(run_id, to_step=42)

    assert await rt.history(run_id) == history
    assert reversals() == []
    assert await rt.store.list_pages() == []


async def test_resume_after_rollback_redoes_the_compensated_refund(
    refund_done: tuple[Runtime, str],
) -> None:
    rt, run_id = refund_done
    await rt.rollback(run_id, to_step=1)
    assert (await rt.store.load_state(run_id)).messages == (await rt.state_at(run_id, 1)).messages

    await rt.resume(run_id)
    pending = await rt.approvals(run_id, state="pending")
    assert [a.tool for a in pending] == ["issue_refund"]
    await rt.decide(pending[0].id, "approved", by=APPROVER)

    state = await rt.store.load_state(run_id)
    assert state.status == RunStatus.DONE
    assert state.messages[-1].content.startswith("Refunded order 1001 (6033 cents)")
    net = sum(a for kind, _, a, _ in example_world.payments() if "refund" in kind)
    assert net == 6033, "the run says it refunded, so the refund must stand in the world"


# compensations that cannot be trusted


@tool(description="Book a slot.", effect="reversible", compensate="unbook")
def book(slot: str, *, ctx: ToolContext) -> dict[str, Any]:
    return {"booked": slot}


@tool(description="Cancel a booking.", effect="irreversible", requires_approval=False)
def unbook(slot: str, *, ctx: ToolContext) -> dict[str, Any]:
    raise RuntimeError("calendar is down")


@tool(description="Move money.", effect="reversible", compensate="unmove", timeout=0.05)
async def move(amount: int) -> dict[str, Any]:
    await asyncio.sleep(5)
    return {"moved": amount}


@tool(description="Move money back.", effect="irreversible", requires_approval=False)
def unmove(amount: int) -> dict[str, Any]:
    raise AssertionError("an in-doubt effect must not be compensated blind")


async def test_failed_compensation_is_paged_never_dropped(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    notifier = RecordingNotifier()
    agent = Agent(
        "booker",
        model=ScriptedModel([tool_call("book", {"slot": "9am"}), "booked"]),
        tools=[book, unbook],
    )
    rt = make_runtime([agent], notifier=notifier)
    run_id = await rt.start("booker", "Book 9am")

    report = await rt.rollback(run_id, to_step=0)
    again = await rt.rollback(run_id, to_step=0)

    assert report.paged == ["call_1_1"]
    assert report.compensated == []
    assert again.paged == again.compensated == []  # a repeat does nothing: paged once
    (page,) = await rt.store.list_pages()
    assert page.reason == "compensation_failed"
    assert "calendar is down" in page.detail
    assert [p.id for p in notifier.pages][:1] == [page.id]
    (undo,) = [e for e in await rt.store.list_effects(run_id) if e.compensates == "call_1_1"]
    assert undo.status == EffectStatus.FAILED
    assert (await rt.store.get_effect(run_id, "call_1_1")).compensated_by is None


async def test_in_doubt_effect_is_paged_not_compensated(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    agent = Agent(
        "mover",
        model=ScriptedModel([tool_call("move", {"amount": 5}), "moved"]),
        tools=[move, unmove],
    )
    rt = make_runtime([agent])
    run_id = await rt.start("mover", "Move 5")
    assert (await rt.get(run_id)).stop_reason == "in_doubt"

    report = await rt.rollback(run_id, to_step=0)

    assert report.paged == ["call_1_1"]
    assert report.compensated == []
    assert [p.reason for p in await rt.store.list_pages()] == ["in_doubt"]
    assert [e.tool for e in await rt.store.list_effects(run_id)] == ["move"]


# the saga: an abandoned run is compensated


def saga_agent(then: list[Any], on_failure: Any = "compensate") -> Agent:
    return stock_agent(["apples", "bread"], name="saga", then=then, on_failure=on_failure)


async def test_cancelled_saga_run_is_compensated_in_reverse(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    wire = tool_call("wire_money", {"account": "ACME", "amount_cents": 1})
    agent = stock_agent(
        ["apples", "bread"],
        name="saga",
        tools=[reserve, release, hold, unhold, wire_money],
        then=[wire, "done"],
        on_failure="compensate",
    )
    rt = make_runtime([agent])
    await rt.start("saga", "Stock up", run_id="run-saga", requested_by=REQUESTER)
    assert (await rt.get("run-saga")).status == RunStatus.WAITING_APPROVAL

    await rt.cancel("run-saga", by="U0OPS", reason="changed plans")

    assert (await rt.get("run-saga")).status == RunStatus.CANCELLED
    (approval,) = await rt.approvals("run-saga")
    assert approval.state == ApprovalState.DECLINED
    assert [(t, s) for t, s, _, _ in invocations() if t in ("release", "unhold")] == [
        ("unhold", "1A"),
        ("release", "bread"),
        ("release", "apples"),
    ]
    effects = await rt.store.list_effects("run-saga")
    assert all(e.compensated_by for e in effects if e.tool in ("reserve", "hold"))
    assert invocations("wire_money") == []
    with pytest.raises(errors.AlreadyDecided):
        await rt.decide(approval.id, "approved", by=APPROVER)
    assert invocations("wire_money") == []
    actions = [e.action for e in await rt.store.list_events(run_id="run-saga")]
    assert "compensate" in actions


async def test_failed_saga_run_is_compensated(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([saga_agent([RuntimeError("model is down")])])

    await rt.start("saga", "Stock up", run_id="run-saga")

    run = await rt.get("run-saga")
    assert run.status == RunStatus.FAILED
    assert run.stop_reason == "error"
    assert [s for _, s in settled("release")] == ["bread", "apples"]
    assert [s for t, s, _, _ in invocations() if t == "unhold"] == ["1A"]
    assert await rt.effects_after("run-saga", 0) == []


async def test_abandoned_run_without_saga_is_left_alone(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([saga_agent([RuntimeError("model is down")], on_failure="stop")])

    await rt.start("saga", "Stock up", run_id="run-saga")

    assert (await rt.get("run-saga")).status == RunStatus.FAILED
    assert settled("release") == []
    assert len(await rt.effects_after("run-saga", 0)) == 3


# killed in the middle of a rollback (real processes, SIGKILL)


async def run_worker(
    db: Path, run_id: str, to_step: int, mode: str, *, kill_after: float | None = None
) -> tuple[int, str]:
    """Run the rollback worker; with `kill_after`, SIGKILL it that long after it starts."""
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(ROOT), str(WORKER.parent.parent)]),
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(WORKER),
        f"sqlite:///{db}",
        run_id,
        str(to_step),
        WORKER_ID,
        mode,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    first = await asyncio.wait_for(proc.stdout.readline(), timeout=60)
    assert first.strip() == b"rolling back", (await proc.communicate())[1].decode()
    if kill_after is not None:
        await asyncio.sleep(kill_after)
        if proc.returncode is None:
            proc.kill()
    out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode is not None
    return proc.returncode, out.decode() + err.decode()


async def hold_a_seat(rt: Runtime) -> str:
    """A stock run that held seat 1A (a compensation that is not idempotent undoes it)."""
    return await rt.start("stock", "Hold a seat")


async def killed_rolling_back(
    store: Store, tmp_path: Path, agent: Agent, start: Callable[[Runtime], Awaitable[str]]
) -> tuple[Runtime, str]:
    """A run `start` made with `agent` on the file store, which the rollback worker then began
    rolling back to step 0 and was SIGKILLed by its first compensator ("die"): this process's
    runtime and the run."""
    rt = Runtime(store, [agent], worker_id=WORKER_ID)
    run_id = await start(rt)
    code, output = await run_worker(tmp_path / "signoff.db", run_id, 0, "die")
    assert code == -9, output
    return rt, run_id


async def test_rollback_killed_after_compensating_then_rerun_compensates_once(
    file_store: Store, world: Path, tmp_path: Path
) -> None:
    rt, run_id = await killed_rolling_back(file_store, tmp_path, refund_agent, refund_run)
    assert len(reversals()) == 1
    (undo,) = [e for e in await file_store.list_effects(run_id) if e.compensates]
    assert undo.status == EffectStatus.STARTED

    report = await rt.rollback(run_id, to_step=0)

    assert report.compensated == ["call_2_1"]
    assert report.paged == ["call_4_1", "call_3_1"]
    (reversal,) = reversals()
    undos = [e for e in await file_store.list_effects(run_id) if e.compensates]
    assert [(e.call_id, e.status) for e in undos] == [(undo.call_id, EffectStatus.COMPLETED)]
    assert reversal[3] == undo.idempotency_key
    assert len(await file_store.list_pages()) == 2
    restores = [c for c in await rt.history(run_id) if c.stop_reason == "rolled_back"]
    assert len(restores) == 1
    assert (await file_store.load_state(run_id)).messages == (await rt.state_at(run_id, 0)).messages


async def test_interrupted_compensation_that_is_not_idempotent_is_paged_not_repeated(
    file_store: Store, world: Path, tmp_path: Path
) -> None:
    rt, run_id = await killed_rolling_back(file_store, tmp_path, stock_agent([]), hold_a_seat)
    report = await rt.rollback(run_id, to_step=0)

    assert [s for t, s, _, _ in invocations() if t == "unhold"] == ["1A"]
    assert report.paged == ["call_1_1"]
    (page,) = await file_store.list_pages()
    assert page.reason == "compensation_failed"
    assert "not idempotent" in page.detail


async def test_rollback_killed_mid_compensation_is_finished_by_recovery(
    file_store: Store, world: Path, tmp_path: Path
) -> None:
    rt, run_id = await killed_rolling_back(file_store, tmp_path, refund_agent, refund_run)
    assert (await rt.get(run_id)).stop_reason == "answered"  # nothing says rolled back yet
    with pytest.raises(errors.InvalidRequest, match="rollback was interrupted"):
        await rt.resume(run_id)

    assert await rt.recover() == [run_id]

    (reversal,) = reversals()
    undos = [e for e in await file_store.list_effects(run_id) if e.compensates]
    assert [(e.call_id, e.status) for e in undos] == [("undo:call_2_1", EffectStatus.COMPLETED)]
    assert reversal[3] == undos[0].idempotency_key
    assert (await rt.get(run_id)).stop_reason == "rolled_back"
    assert (await file_store.load_state(run_id)).messages == (await rt.state_at(run_id, 0)).messages
    history = await rt.history(run_id)
    assert await rt.recover() == []
    assert await rt.history(run_id) == history
    assert len(reversals()) == 1


async def test_recovery_pages_an_interrupted_compensation_that_may_not_run_again_once(
    file_store: Store, world: Path, tmp_path: Path
) -> None:
    rt, run_id = await killed_rolling_back(file_store, tmp_path, stock_agent([]), hold_a_seat)

    assert await rt.recover() == [run_id]
    history = await rt.history(run_id)
    assert await rt.recover() == []

    assert await rt.history(run_id) == history
    assert [s for t, s, _, _ in invocations() if t == "unhold"] == ["1A"]
    (page,) = await file_store.list_pages()
    assert page.reason == "compensation_failed"
    (undo,) = [e for e in await file_store.list_effects(run_id) if e.compensates]
    assert undo.status == EffectStatus.IN_DOUBT


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_rollback_killed_at_random_moments_compensates_each_effect_once(
    file_store: Store, world: Path, tmp_path: Path, seed: int
) -> None:
    rt = Runtime(file_store, [stock_agent(ITEMS)], worker_id=WORKER_ID)
    run_id = await rt.start("stock", "Stock up")
    reserved = [e for e in await file_store.list_effects(run_id) if e.tool == "reserve"]
    assert len(reserved) == len(ITEMS)
    chance = random.Random(seed)

    kills = 0
    for _ in range(2):
        code, output = await run_worker(
            tmp_path / "signoff.db", run_id, 0, "slow", kill_after=chance.uniform(0.0, 0.9)
        )
        assert code in (0, -9), output
        kills += code == -9
    await rt.rollback(run_id, to_step=0)  # finishes it, or does nothing if a worker did

    (ended,) = [e for e in await file_store.list_events(run_id=run_id) if e.action == "rollback"]
    compensated, paged = ended.detail["compensated"], ended.detail["paged"]
    hold_id = f"call_{len(ITEMS) + 1}_1"
    assert set(compensated) - {hold_id} == {e.call_id for e in reserved}
    assert (hold_id in compensated) != (hold_id in paged)
    assert len([t for t, *_ in invocations() if t == "unhold"]) <= 1
    assert Counter(s for _, s in settled("release")) == Counter(ITEMS)
    tries = [(s, k) for t, s, _, k in invocations() if t == "release"]
    assert len(tries) <= len(ITEMS) + kills
    assert all(len({k for s2, k in tries if s2 == s}) == 1 for s, _ in tries)
    undos = [e for e in await file_store.list_effects(run_id) if e.tool == "release"]
    assert Counter(e.compensates for e in undos) == Counter(e.call_id for e in reserved)
    assert all(e.status == EffectStatus.COMPLETED for e in undos)
    reserves = [e for e in await file_store.list_effects(run_id) if e.tool == "reserve"]
    assert [e.compensated_by for e in reserves] == [f"undo:{e.call_id}" for e in reserved]
    final = await file_store.load_state(run_id)
    assert final.step == 0
    assert tool_messages(final.messages, "call_1_1") == []


# where a rollback starts and ends


async def test_compensations_are_recorded_at_the_step_the_run_returns_to(
    refund_done: tuple[Runtime, str],
) -> None:
    rt, run_id = refund_done

    await rt.rollback(run_id, to_step=1)

    (undo,) = [e for e in await rt.store.list_effects(run_id) if e.compensates == "call_2_1"]
    assert undo.step == 1


async def test_repeating_a_rollback_is_a_no_op_that_says_so(
    refund_done: tuple[Runtime, str],
) -> None:
    rt, run_id = refund_done
    await rt.rollback(run_id, to_step=0)
    history, events = await rt.history(run_id), await rt.store.list_events(run_id=run_id)

    again = await rt.rollback(run_id, to_step=0)

    assert (again.compensated, again.paged, again.skipped) == ([], [], [])
    assert again.nothing_to_do is not None
    assert "already rolled back to step 0" in again.nothing_to_do
    assert again.as_dict()["nothing_to_do"] == again.nothing_to_do
    assert await rt.history(run_id) == history
    assert await rt.store.list_events(run_id=run_id) == events
    assert len(reversals()) == 1


async def test_a_second_rollback_undoes_only_what_is_left_on_the_timeline(
    refund_done: tuple[Runtime, str],
) -> None:
    rt, run_id = refund_done
    await rt.rollback(run_id, to_step=2)

    report = await rt.rollback(run_id, to_step=0)

    assert report.compensated == ["call_2_1"]
    assert report.skipped == ["call_1_1"]
    assert report.paged == []  # the charge and e-mail were paged by the first rollback, once
    assert len(reversals()) == 1
    assert len(await rt.store.list_pages()) == 2


async def test_parked_run_rolled_back_to_its_own_step_asks_again_on_resume(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([refund_agent])
    run_id = await rt.start("refund-agent", "Refund order 1001", requested_by=REQUESTER)
    run = await rt.get(run_id)
    assert run.status == RunStatus.WAITING_APPROVAL
    (first,) = await rt.approvals(run_id)

    report = await rt.rollback(run_id, to_step=run.step)
    assert (report.compensated, report.paged) == ([], [])
    assert (await rt.approvals(run_id, state="declined"))[0].id == first.id  # withdrawn

    resumed = await rt.resume(run_id)

    assert resumed.status == RunStatus.WAITING_APPROVAL
    (again,) = await rt.approvals(run_id, state="pending")
    assert (again.call_id, again.tool, again.args) == (first.call_id, first.tool, first.args)
    state = await rt.store.load_state(run_id)
    assert tool_messages(state.messages, first.call_id) == []  # not told it was declined
    await rt.decide(again.id, "approved", by=APPROVER)
    assert (await rt.get(run_id)).status == RunStatus.DONE
    assert [p[0] for p in example_world.payments()].count("refund") == 1


async def test_rollback_refused_for_a_missing_agent_leaves_no_intent(
    refund_done: tuple[Runtime, str], store: Store
) -> None:
    rt, run_id = refund_done
    events = await store.list_events(run_id=run_id)
    elsewhere = Runtime(store, [stock_agent([])], worker_id="rb-elsewhere")

    with pytest.raises(errors.UnknownAgent, match="refund-agent"):
        await elsewhere.rollback(run_id, to_step=0)

    assert await store.list_events(run_id=run_id) == events
    assert await rt.recover() == []
    assert reversals() == []


@dataclass(eq=False)
class FailingBetweenUndos(WrappedStore):
    """Wraps a store: the commit that starts the second compensation fails."""

    starts: int = field(init=False, default=0)
    """Commits that started a compensation so far."""

    async def commit(self, batch: Batch) -> Committed:
        if any(e.compensates is not None for e in batch.start):
            self.starts += 1
            if self.starts == 2:
                raise store_errors.DatabaseError("disk I/O error")
        return await self.store.commit(batch)


async def test_rollback_stopped_between_two_undos_is_finished_by_recovery(
    file_store: Store, world: Path
) -> None:
    agent = stock_agent(["apples", "bread"])
    rt = Runtime(file_store, [agent], worker_id=WORKER_ID)
    run_id = await rt.start("stock", "Stock up")
    failing = Runtime(cast(Store, FailingBetweenUndos(file_store)), [agent], worker_id=WORKER_ID)
    with pytest.raises(store_errors.DatabaseError):
        await failing.rollback(run_id, to_step=0)
    undos = [e for e in await file_store.list_effects(run_id) if e.compensates]
    assert [e.status for e in undos] == [EffectStatus.COMPLETED]  # none left `started`

    assert await rt.recover() == [run_id]

    assert Counter(t for t, _, _, _ in invocations() if t in ("release", "unhold")) == {
        "unhold": 1,
        "release": 2,
    }
    assert (await rt.get(run_id)).stop_reason == "rolled_back"
    assert (await rt.get(run_id)).step == 0
    assert await rt.recover() == []


async def test_resume_while_a_rollback_stopped_between_two_undos_is_refused(
    file_store: Store, world: Path
) -> None:
    agent = stock_agent(["apples", "bread"], then=[RuntimeError("model is down")])
    rt = Runtime(file_store, [agent], worker_id=WORKER_ID)
    run_id = await rt.start("stock", "Stock up")
    assert (await rt.get(run_id)).stop_reason == "error"
    failing = Runtime(cast(Store, FailingBetweenUndos(file_store)), [agent], worker_id=WORKER_ID)
    with pytest.raises(store_errors.DatabaseError):
        await failing.rollback(run_id, to_step=0)
    history = await rt.history(run_id)

    with pytest.raises(errors.InvalidRequest, match="rollback was interrupted"):
        await rt.resume(run_id)
    with pytest.raises(errors.InvalidRequest, match="rollback of it was interrupted"):
        await rt.fork(run_id, from_step=1)

    assert await rt.history(run_id) == history
