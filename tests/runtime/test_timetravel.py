"""Time travel (issue 5, runtime side): history, the exact state at every step, forks that
never redo what happened, dry-run forks and edited transcripts."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from approvals_conftest_helpers import APPROVER
from approvals_conftest_helpers import RecordingNotifier
from approvals_conftest_helpers import history_around_rollback
from approvals_conftest_helpers import invocations
from approvals_conftest_helpers import notify
from approvals_conftest_helpers import quote
from approvals_conftest_helpers import release
from approvals_conftest_helpers import reserve
from approvals_conftest_helpers import tool_messages

from examples import world as example_world
from examples.refund_agent import _results as transcript_results
from runtime import Agent
from runtime import Runtime
from runtime import ScriptedModel
from runtime import errors
from runtime import tool
from runtime import tool_call
from runtime.model import Entry
from store import AuditEvent
from store import Message
from store import Reversibility
from store import RunStatus
from store import Store
from store import Usage

STEPS = 200


@tool(description="Count.", effect="read")
def count(n: int) -> dict[str, int]:
    return {"n": n, "double": n * 2}


def counting_agent(seen: list[list[Message]]) -> Agent:
    """A 200-step agent whose policy records the transcript of every model call."""

    def policy(messages: Sequence[Message]) -> Entry:
        seen.append(list(messages))
        done = sum(1 for m in messages if m.role == "tool")
        if done == STEPS - 1:
            return f"counted to {done}"
        return tool_call("count", {"n": done})

    return Agent("counter", model=ScriptedModel(policy), tools=[count], system_prompt="Count.")


# history and state_at


@pytest.fixture
async def long_run(file_store: Store) -> tuple[Runtime, str, list[list[Message]]]:
    seen: list[list[Message]] = []
    rt = Runtime(file_store, [counting_agent(seen)], worker_id="tt-worker")
    run_id = await rt.start("counter", "Count to 199")
    return rt, run_id, seen


async def test_long_run_finishes_after_200_steps(
    long_run: tuple[Runtime, str, list[list[Message]]],
) -> None:
    rt, run_id, seen = long_run

    run = await rt.get(run_id)

    assert run.status == RunStatus.DONE
    assert run.step == STEPS
    assert run.usage.steps == STEPS
    assert len(seen) == STEPS


async def test_state_at_every_step_is_what_the_model_saw(
    long_run: tuple[Runtime, str, list[list[Message]]],
) -> None:
    rt, run_id, seen = long_run

    for k in range(STEPS):
        state = await rt.state_at(run_id, k)
        assert state.step == k
        assert list(state.messages) == seen[k], f"step {k}"
        assert state.usage.steps == k
        assert state.status == RunStatus.RUNNING
    last = await rt.state_at(run_id, STEPS)
    assert last.status == RunStatus.DONE
    assert list(last.messages[:-1]) == seen[-1]
    assert last.messages[-1].content == f"counted to {STEPS - 1}"


async def test_history_has_every_checkpoint_in_order(
    long_run: tuple[Runtime, str, list[list[Message]]],
) -> None:
    rt, run_id, _ = long_run

    history = await rt.history(run_id)
    final = await rt.store.load_state(run_id)

    assert [c.seq for c in history] == list(range(len(history)))
    assert history[0].snapshot is True
    assert [c.snapshot for c in history[1:]] == [False] * (len(history) - 1)
    appended = [m for c in history for m in c.messages]
    assert tuple(appended) == final.messages
    steps = [c.step for c in history]
    assert steps == sorted(steps)
    assert set(steps) == set(range(STEPS + 1))
    assert history[-1].status == RunStatus.DONE
    assert history[-1].usage == final.usage
    usage = [c.usage for c in history]
    assert all(a.steps <= b.steps and a.cost <= b.cost for a, b in itertools.pairwise(usage))
    assert all(c.usage.steps == c.step for c in history)


async def test_history_shows_what_each_checkpoint_appended(
    refund_done: tuple[Runtime, str],
) -> None:
    rt, run_id = refund_done

    history = await rt.history(run_id)

    assert [m.role for m in history[0].messages] == ["system", "user"]
    parked = [c for c in history if c.status == RunStatus.WAITING_APPROVAL]
    assert len(parked) == 1
    assert parked[0].step == 2
    assert parked[0].usage.steps == 2
    tools = [m.name for c in history for m in c.messages if m.role == "tool"]
    assert tools == ["lookup_order", "issue_refund", "charge", "send_email"]
    assert history[-1].usage == (await rt.get(run_id)).usage
    assert history[-1].usage.input_tokens > 0


async def test_state_at_an_unknown_step_is_a_clear_error(refund_done: tuple[Runtime, str]) -> None:
    rt, run_id = refund_done

    with pytest.raises(errors.InvalidRequest, match="no step 99"):
        await rt.state_at(run_id, 99)
    with pytest.raises(errors.InvalidRequest):
        await rt.state_at(run_id, -1)
    with pytest.raises(errors.RunNotFound):
        await rt.state_at("run-nope", 1)


# forks


async def test_effects_after_lists_what_happened_after_a_step(
    refund_done: tuple[Runtime, str],
) -> None:
    rt, run_id = refund_done

    after = await rt.effects_after(run_id, 2)

    assert [(e.tool, e.step) for e in after] == [("charge", 3), ("send_email", 4)]
    assert [e.tool for e in await rt.effects_after(run_id, 0)] == [
        "issue_refund",
        "charge",
        "send_email",
    ]


async def test_fork_does_not_charge_again_and_shows_the_recorded_result(
    refund_done: tuple[Runtime, str],
) -> None:
    rt, run_id = refund_done
    charged = await rt.store.get_effect(run_id, "call_3_1")
    payments, emails = example_world.payments(), example_world.emails()

    fork_id = await rt.fork(run_id, from_step=2)

    fork = await rt.get(fork_id)
    assert fork.status == RunStatus.DONE
    assert (fork.parent_id, fork.fork_step, fork.lineage_id) == (run_id, 2, run_id)
    assert example_world.payments() == payments
    assert example_world.emails() == emails
    state = await rt.store.load_state(fork_id)
    (charge_call,) = [c for m in state.messages[-5:] for c in m.tool_calls if c.name == "charge"]
    assert tool_messages(state.messages, charge_call.id) == [charged.result]
    assert await rt.store.list_effects(fork_id) == []
    events = [e for e in await rt.store.list_events(run_id=fork_id) if e.action == "fork"]
    assert events[0].detail["already_happened"] == ["charge:call_3_1", "send_email:call_4_1"]


async def test_fork_starts_from_the_state_at_its_step(refund_done: tuple[Runtime, str]) -> None:
    rt, run_id = refund_done
    at_two = await rt.state_at(run_id, 2)

    fork_id = await rt.fork(run_id, from_step=2)

    assert await rt.state_at(fork_id, 2) == at_two.model_copy(update={"run_id": fork_id, "seq": 0})
    fork_history = await rt.history(fork_id)
    assert fork_history[0].snapshot is True
    assert fork_history[0].messages == at_two.messages


async def test_fork_reissuing_an_approved_call_returns_the_result_without_a_new_approval(
    refund_done: tuple[Runtime, str],
) -> None:
    rt, run_id = refund_done
    refunded = await rt.store.get_effect(run_id, "call_2_1")
    payments = example_world.payments()

    fork_id = await rt.fork(run_id, from_step=1)

    assert example_world.payments() == payments
    assert await rt.approvals(fork_id) == []
    state = await rt.store.load_state(fork_id)
    assert transcript_results(state.messages[-8:])["issue_refund"] == refunded.result
    assert state.status == RunStatus.DONE


def shop_agent(name: str = "shop") -> Agent:
    """Looks a price up (1), reserves stock at that price (2), notifies (3), answers (4)."""

    def policy(messages: Sequence[Message]) -> Entry:
        results = transcript_results(messages)
        if "quote" not in results:
            return tool_call("quote", {"item": "lamp"})
        price = results["quote"]["price_cents"]
        if "reserve" not in results:
            return tool_call("reserve", {"item": "lamp", "amount": price})
        if "notify" not in results:
            return tool_call("notify", {"to": "ops", "text": f"reserved at {price}"})
        return f"done at {price}"

    return Agent(name, model=ScriptedModel(policy), tools=[quote, reserve, release, notify])


def cheaper_quote(messages: list[Message]) -> list[Message]:
    """Swap the quote's result for a cheaper price."""
    return [
        m.model_copy(update={"content": json.dumps({"item": "lamp", "price_cents": 7})})
        if m.name == "quote"
        else m
        for m in messages
    ]


async def test_dry_run_fork_calls_no_mutating_tool(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([shop_agent()])
    run_id = await rt.start("shop", "Reserve a lamp")
    before = invocations()

    fork_id = await rt.fork(run_id, from_step=1, modify=cheaper_quote, dry_run=True)

    assert invocations() == before
    fork = await rt.get(fork_id)
    assert fork.dry_run is True
    assert fork.status == RunStatus.DONE
    effects = await rt.store.list_effects(fork_id)
    assert [e for e in effects if e.reversibility != Reversibility.READ] == []
    state = await rt.store.load_state(fork_id)
    would = [json.loads(m.content) for m in state.messages if m.role == "tool"][-2:]
    assert [w["would_call"] for w in would] == ["reserve", "notify"]
    assert would[0]["args"] == {"item": "lamp", "amount": 7}
    assert all(w["executed"] is False and w["dry_run"] is True for w in would)


def smaller_order(messages: list[Message]) -> list[Message]:
    """Swap the looked-up order for one of a smaller amount, so the refund is a new call."""
    out = []
    for m in messages:
        if m.name == "lookup_order":
            found = dict(json.loads(m.content), amount_cents=999)
            m = m.model_copy(update={"content": json.dumps(found)})
        out.append(m)
    return out


async def test_dry_run_fork_asks_no_human_for_approval(
    refund_done: tuple[Runtime, str], notifier: RecordingNotifier
) -> None:
    rt, run_id = refund_done
    payments, emails = example_world.payments(), example_world.emails()

    fork_id = await rt.fork(run_id, from_step=1, modify=smaller_order, dry_run=True)

    assert example_world.payments() == payments
    assert example_world.emails() == emails
    assert await rt.approvals(fork_id) == []
    assert len(notifier.requested) == 1
    state = await rt.store.load_state(fork_id)
    assert state.status == RunStatus.DONE
    refund = transcript_results(state.messages)["issue_refund"]
    assert refund["dry_run"] is True
    assert refund["args"] == {"order_id": "1001", "amount_cents": 999, "restocking_fee_cents": 500}


async def test_modify_edits_the_transcript_the_fork_sees(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([shop_agent()])
    run_id = await rt.start("shop", "Reserve a lamp")

    fork_id = await rt.fork(run_id, from_step=1, modify=cheaper_quote)

    state = await rt.store.load_state(fork_id)
    assert transcript_results(state.messages)["quote"] == {"item": "lamp", "price_cents": 7}
    assert state.messages[-1].content == "done at 7"
    reserved = [(i[1], i[2]) for i in invocations("reserve")]
    assert reserved == [("lamp", 104), ("lamp", 7)]
    parent = await rt.store.load_state(run_id)
    assert parent.messages[-1].content == "done at 104"


async def test_modify_returning_bad_messages_is_refused(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([shop_agent()])
    run_id = await rt.start("shop", "Reserve a lamp")
    runs = await rt.list()

    def broken(messages: list[Message]) -> list[Any]:
        return [*messages, {"role": "wizard", "content": "x"}]

    with pytest.raises(errors.InvalidRequest, match="modify"):
        await rt.fork(run_id, from_step=1, modify=broken)

    assert [r.id for r in await rt.list()] == [r.id for r in runs]


async def test_fork_keeps_usage_and_never_resets_it(
    make_runtime: Callable[..., Runtime], world: Path
) -> None:
    rt = make_runtime([shop_agent()])
    run_id = await rt.start("shop", "Reserve a lamp")
    at_one = await rt.state_at(run_id, 1)

    fork_id = await rt.fork(run_id, from_step=1, modify=cheaper_quote)

    history = await rt.history(fork_id)
    assert history[0].usage == at_one.usage
    assert history[0].usage != Usage()
    assert (await rt.get(fork_id)).usage.steps == 4


# a failed fork leaves nothing behind


async def test_fork_without_the_agent_is_refused_and_creates_nothing(
    refund_done: tuple[Runtime, str], store: Store
) -> None:
    rt, run_id = refund_done
    elsewhere = Runtime(store, [shop_agent()], worker_id="tt-elsewhere")
    runs = [r.id for r in await rt.list()]

    with pytest.raises(errors.UnknownAgent, match="refund-agent"):
        await elsewhere.fork(run_id, from_step=2)

    assert [r.id for r in await rt.list()] == runs
    assert [e for e in await store.list_events() if e.action == "fork"] == []


async def test_fork_while_a_rollback_is_unfinished_is_refused(
    refund_done: tuple[Runtime, str],
) -> None:
    rt, run_id = refund_done
    await rt.store.record_event(
        AuditEvent(action="undo_started", actor="U1", run_id=run_id, detail={"to_step": 1})
    )
    runs = [r.id for r in await rt.list()]

    with pytest.raises(errors.InvalidRequest, match="rollback"):
        await rt.fork(run_id, from_step=1)

    assert [r.id for r in await rt.list()] == runs


# after a rollback, steps are those of the run's current timeline


async def test_steps_a_rollback_undid_are_not_served_or_forked(
    refund_done: tuple[Runtime, str],
) -> None:
    rt, run_id = refund_done
    at_two = await rt.state_at(run_id, 2)
    await rt.rollback(run_id, to_step=2)
    runs = [r.id for r in await rt.list()]

    assert (await rt.state_at(run_id, 2)).messages == at_two.messages
    for step in (3, 4, 5):
        with pytest.raises(errors.InvalidRequest, match=f"no step {step}"):
            await rt.state_at(run_id, step)
        with pytest.raises(errors.InvalidRequest, match=f"no step {step}"):
            await rt.fork(run_id, from_step=step)
    assert [r.id for r in await rt.list()] == runs


async def test_history_keeps_the_undone_steps_marked_as_rolled_back(
    refund_done: tuple[Runtime, str],
) -> None:
    rt, run_id = refund_done
    before, after = await history_around_rollback(rt, run_id, to_step=2)

    assert [c.model_copy(update={"rolled_back": False}) for c in after[: len(before)]] == before
    assert [c.step for c in after if c.rolled_back] == [c.step for c in before if c.step > 2]
    assert not after[-1].rolled_back
    assert after[-1].step == 2


async def test_after_a_rollback_and_a_resume_steps_are_the_new_ones(
    refund_done: tuple[Runtime, str],
) -> None:
    rt, run_id = refund_done
    await rt.rollback(run_id, to_step=1)
    await rt.resume(run_id)
    (pending,) = await rt.approvals(run_id, state="pending")
    await rt.decide(pending.id, "approved", by=APPROVER)

    state = await rt.state_at(run_id, 2)
    (refund,) = [c for m in state.messages for c in m.tool_calls if c.name == "issue_refund"]
    assert refund.id != "call_2_1"  # the call of the new timeline, not the compensated one
    history = await rt.history(run_id)
    assert {c.step for c in history if c.rolled_back} == {2, 3, 4, 5}
    assert {c.step for c in history if not c.rolled_back} == {0, 1, 2, 3, 4, 5}
    fork_id = await rt.fork(run_id, from_step=2, dry_run=True)
    fork_start = (await rt.history(fork_id))[0]
    assert fork_start.messages == state.messages
