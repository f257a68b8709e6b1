"""Tool calls in a run: timeouts (async and sync), in-doubt mutations, retries of idempotent
tools with the same key, bad arguments, unknown tools, and what a tool is told."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import pytest
from runtime_scenarios import CountingModel
from runtime_scenarios import RecordingNotifier
from runtime_scenarios import assert_well_formed

from runtime import Agent
from runtime import Message
from runtime import Runtime
from runtime import ScriptedModel
from runtime import Tool
from runtime import ToolContext
from runtime import errors
from runtime import tool
from runtime import tool_call
from runtime.model import Entry
from store import EffectStatus
from store import RunStatus
from store import Store


def last_result(messages: Sequence[Message]) -> Any:
    return json.loads(next(m.content for m in reversed(messages) if m.role == "tool"))


def answer_with_last_result(messages: Sequence[Message]) -> Entry:
    return f"The tool said: {next(m.content for m in reversed(messages) if m.role == 'tool')}"


def agent_with(*tools: Tool, script: Sequence[Any]) -> tuple[Agent, CountingModel]:
    model = CountingModel(ScriptedModel(list(script)))
    return Agent("tooler", model=model, tools=tools), model


async def run_once(store: Store, agent: Agent, **options: Any) -> tuple[Runtime, str]:
    rt = Runtime(store, [agent], worker_id="w", **options)
    return rt, await rt.start(agent.name, "Use the tool")


# timeouts


async def test_async_read_tool_timeout_is_an_error_result_and_the_run_goes_on(
    store: Store,
) -> None:
    @tool(description="Slow lookup.", effect="read", timeout=0.2)
    async def lookup(key: str) -> str:
        await asyncio.sleep(30)
        return key

    agent, model = agent_with(
        lookup, script=[tool_call("lookup", {"key": "k"}), answer_with_last_result]
    )
    rt, run_id = await run_once(store, agent)

    run = await rt.get(run_id)
    assert (run.status, model.calls) == (RunStatus.DONE, 2)
    state = await store.load_state(run_id)
    assert "did not finish within 0.2s" in last_result(state.messages)["error"]
    (effect,) = await store.list_effects(run_id)
    assert effect.status == EffectStatus.FAILED


async def test_sync_read_tool_timeout_is_an_error_result_and_the_run_goes_on(
    store: Store,
) -> None:
    release = threading.Event()

    @tool(description="Slow lookup.", effect="read", timeout=0.2)
    def lookup(key: str) -> str:
        release.wait(30)
        return key

    agent, model = agent_with(
        lookup, script=[tool_call("lookup", {"key": "k"}), answer_with_last_result]
    )
    try:
        rt, run_id = await run_once(store, agent)
    finally:
        release.set()

    run = await rt.get(run_id)
    assert (run.status, model.calls) == (RunStatus.DONE, 2)
    state = await store.load_state(run_id)
    assert "did not finish within 0.2s" in last_result(state.messages)["error"]
    assert (await store.list_effects(run_id))[0].status == EffectStatus.FAILED


@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_mutating_tool_timeout_is_in_doubt_and_pages(store: Store, kind: str) -> None:
    release = threading.Event()

    async def transfer_async(amount: int) -> str:
        await asyncio.sleep(30)
        return "sent"

    def transfer_sync(amount: int) -> str:
        release.wait(30)
        return "sent"

    transfer = Tool(
        transfer_async if kind == "async" else transfer_sync,
        name="transfer",
        effect="irreversible",
        requires_approval=False,
        timeout=0.2,
    )
    agent, model = agent_with(transfer, script=[tool_call("transfer", {"amount": 5}), "done"])
    notifier = RecordingNotifier()
    try:
        rt, run_id = await run_once(store, agent, notifier=notifier)
    finally:
        release.set()

    run = await rt.get(run_id)
    assert (run.status, run.stop_reason) == (RunStatus.FAILED, "in_doubt")
    assert "did not finish within 0.2s" in (run.error or "")
    assert model.calls == 1
    (effect,) = await store.list_effects(run_id)
    assert effect.status == EffectStatus.IN_DOUBT
    (page,) = await store.list_pages()
    assert (page.run_id, page.call_id, page.tool, page.reason) == (
        run_id,
        effect.call_id,
        "transfer",
        "in_doubt",
    )
    assert [p.id for p in notifier.pages] == [page.id]
    assert_well_formed((await store.load_state(run_id)).messages, settled=False)


async def in_doubt_transfer(store: Store) -> tuple[Runtime, str, CountingModel]:
    """A run whose transfer (call_1_1) timed out, so nobody knows whether it happened."""

    @tool(description="Wire money.", effect="irreversible", requires_approval=False, timeout=0.2)
    async def transfer(amount: int) -> str:
        await asyncio.sleep(30)
        return "sent"

    agent, model = agent_with(
        transfer, script=[tool_call("transfer", {"amount": 5}), answer_with_last_result]
    )
    rt, run_id = await run_once(store, agent)
    return rt, run_id, model


async def test_in_doubt_resolved_as_happened_without_a_result_tells_the_model_so(
    store: Store,
) -> None:
    rt, run_id, _ = await in_doubt_transfer(store)

    effect = await rt.resolve(run_id, "call_1_1", happened=True, by="U_ONCALL")
    await rt.resume(run_id)

    assert effect.result == {"happened": True, "according_to": "U_ONCALL"}
    state = await store.load_state(run_id)
    assert last_result(state.messages) == {"happened": True, "according_to": "U_ONCALL"}


async def test_in_doubt_resolved_as_not_happened_tells_the_model(store: Store) -> None:
    rt, run_id, model = await in_doubt_transfer(store)

    with pytest.raises(errors.RunNotFound, match="no run 'nosuch'"):
        await rt.resolve("nosuch", "call_1_1", happened=False, by="U_ONCALL")
    effect = await rt.resolve(run_id, "call_1_1", happened=False, by="U_ONCALL")
    run = await rt.resume(run_id)

    assert effect.status == EffectStatus.FAILED
    assert (run.status, model.calls) == (RunStatus.DONE, 2)
    state = await store.load_state(run_id)
    assert "U_ONCALL" in last_result(state.messages)["error"]
    assert await store.list_pages() == []
    assert_well_formed(state.messages)


BOOK_12A = [tool_call("book", {"seat": "12A"}), "done"]


def seat_booking(timeout: float, hangs_on: set[int]) -> tuple[Tool, list[tuple[str, int]]]:
    """An idempotent `book` tool that hangs past its `timeout` on the attempts in `hangs_on`,
    and the (idempotency key, attempt) of every call it gets."""
    seen: list[tuple[str, int]] = []

    @tool(
        description="Book a seat.",
        effect="irreversible",
        requires_approval=False,
        idempotent=True,
        timeout=timeout,
    )
    async def book(seat: str, *, ctx: ToolContext) -> str:
        seen.append((ctx.idempotency_key, ctx.attempt))
        if ctx.attempt in hangs_on:
            await asyncio.sleep(30)
        return f"booked {seat}"

    return book, seen


async def test_idempotent_tool_that_times_out_once_is_retried_with_the_same_key(
    store: Store,
) -> None:
    book, seen = seat_booking(timeout=0.2, hangs_on={1})
    agent, _ = agent_with(book, script=BOOK_12A)
    rt, run_id = await run_once(store, agent)

    assert (await rt.get(run_id)).status == RunStatus.DONE
    (effect,) = await store.list_effects(run_id)
    assert seen == [(effect.idempotency_key, 1), (effect.idempotency_key, 2)]
    assert (effect.status, effect.result) == (EffectStatus.COMPLETED, "booked 12A")
    assert "retry_in_doubt" in [e.action for e in await store.list_events(run_id=run_id)]


async def test_idempotent_tool_that_times_out_twice_pages(store: Store) -> None:
    book, seen = seat_booking(timeout=0.1, hangs_on={1, 2, 3})
    agent, _ = agent_with(book, script=BOOK_12A)
    rt, run_id = await run_once(store, agent)

    run = await rt.get(run_id)
    attempts = [attempt for _, attempt in seen]
    assert (run.status, run.stop_reason, attempts) == (RunStatus.FAILED, "in_doubt", [1, 2])
    assert len(await store.list_pages()) == 1


# arguments and names


@pytest.mark.parametrize(
    ("arguments", "complaint"),
    [
        ({"order_id": "4471"}, "amount_cents"),
        ({"order_id": "4471", "amount_cents": "lots"}, "amount_cents"),
        ({"order_id": "4471", "amount_cents": 5, "admin": True}, "admin"),
        ({"order_id": ["4471"], "amount_cents": 5}, "order_id"),
    ],
    ids=["missing", "wrong-type", "extra", "list-for-str"],
)
async def test_bad_arguments_are_an_error_result_and_nothing_runs(
    store: Store, arguments: dict[str, Any], complaint: str
) -> None:
    ran: list[str] = []

    @tool(description="Refund.", effect="irreversible", requires_approval=True)
    def refund(order_id: str, amount_cents: int) -> str:
        ran.append(order_id)
        return "refunded"

    agent, model = agent_with(
        refund, script=[tool_call("refund", arguments), answer_with_last_result]
    )
    rt, run_id = await run_once(store, agent)

    assert (await rt.get(run_id)).status == RunStatus.DONE
    assert model.calls == 2
    assert ran == []
    assert await store.list_effects(run_id) == []
    assert await store.list_approvals(run_id=run_id) == []
    result = last_result((await store.load_state(run_id)).messages)
    assert result["executed"] is False
    assert "invalid arguments for refund" in result["error"]
    assert complaint in result["error"]


@pytest.mark.parametrize(
    "script",
    [
        [tool_call("pay", {"cents": 1}, id="x"), tool_call("pay", {"cents": 2}, id="x"), "ok"],
        [[tool_call("pay", {"cents": 1}, id="x"), tool_call("pay", {"cents": 2}, id="x")], "ok"],
    ],
    ids=["across-turns", "within-a-reply"],
)
async def test_a_reused_call_id_does_not_wedge_the_run(store: Store, script: list[Any]) -> None:
    @tool(description="Pay.", effect="irreversible", requires_approval=False)
    def pay(cents: int) -> int:
        return cents

    agent, _ = agent_with(pay, script=script)
    rt, run_id = await run_once(store, agent)

    run = await rt.get(run_id)
    assert run.status != RunStatus.RUNNING, "start() returned with the run running undriven"
    assert run.stop_reason is not None
    assert await rt.recover() == []


async def test_unknown_tool_is_an_error_result(store: Store) -> None:
    @tool(description="Look.", effect="read")
    def look() -> str:
        return "seen"

    agent, _ = agent_with(look, script=[tool_call("launch", {"x": 1}), "done"])
    rt, run_id = await run_once(store, agent)

    assert (await rt.get(run_id)).status == RunStatus.DONE
    assert await store.list_effects(run_id) == []
    state = await store.load_state(run_id)
    result = last_result(state.messages)
    assert result["executed"] is False
    assert "unknown tool 'launch'" in result["error"]
    assert "look" in result["error"]
    assert_well_formed(state.messages)


async def test_tool_exception_is_a_failed_effect_and_an_error_result(store: Store) -> None:
    @tool(description="Explode.", effect="irreversible", requires_approval=False)
    def explode(why: str) -> str:
        raise ValueError(why)

    agent, _ = agent_with(explode, script=[tool_call("explode", {"why": "no fuel"}), "done"])
    rt, run_id = await run_once(store, agent)

    assert (await rt.get(run_id)).status == RunStatus.DONE
    (effect,) = await store.list_effects(run_id)
    assert (effect.status, effect.error) == (EffectStatus.FAILED, "ValueError: no fuel")
    assert last_result((await store.load_state(run_id)).messages) == {
        "error": "ValueError: no fuel"
    }


# sync, async, and what a tool is told


async def test_sync_and_async_tools_both_run(store: Store) -> None:
    threads: dict[str, str] = {}

    @tool(description="Sync.", effect="read")
    def double(n: int) -> int:
        threads["sync"] = threading.current_thread().name
        return n * 2

    @tool(description="Async.", effect="read")
    async def triple(n: int) -> int:
        threads["async"] = threading.current_thread().name
        return n * 3

    agent, _ = agent_with(
        double,
        triple,
        script=[[tool_call("double", {"n": 4}), tool_call("triple", {"n": "5"})], "done"],
    )
    rt, run_id = await run_once(store, agent)

    assert (await rt.get(run_id)).status == RunStatus.DONE
    effects = await store.list_effects(run_id)
    assert [(e.tool, e.args, e.result) for e in effects] == [
        ("double", {"n": 4}, 8),
        ("triple", {"n": 5}, 15),
    ]
    assert threads["async"] == threading.main_thread().name
    assert threads["sync"] != threading.main_thread().name


async def test_a_def_tool_that_does_not_block_runs_on_the_loop(store: Store) -> None:
    threads: dict[str, str] = {}

    @tool(description="Pure arithmetic.", effect="read", blocking=False)
    def double(n: int, *, ctx: ToolContext) -> int:
        threads["ran on"] = threading.current_thread().name
        assert ctx.deadline is None  # no timeout can stop it, so it is told of none
        return n * 2 + ctx.attempt

    agent, _ = agent_with(double, script=[tool_call("double", {"n": 4}), "done"])
    rt, run_id = await run_once(store, agent)

    assert (await rt.get(run_id)).status == RunStatus.DONE
    [effect] = await store.list_effects(run_id)
    assert (effect.status, effect.result) == (EffectStatus.COMPLETED, 9)
    assert threads["ran on"] == threading.main_thread().name


@pytest.mark.parametrize(
    ("declare", "why"),
    [
        (lambda: tool(effect="read", blocking=False)(_async_lookup), "an async tool never"),
        (
            lambda: tool(effect="read", blocking=False, timeout=5)(_sync_lookup),
            "no timeout can stop it",
        ),
    ],
    ids=["async", "with a timeout"],
)
def test_blocking_false_is_only_for_a_def_tool_without_a_timeout(
    declare: Callable[[], Tool], why: str
) -> None:
    with pytest.raises(errors.DefinitionError, match=why):
        declare()


async def _async_lookup(key: str) -> str:
    return key


def _sync_lookup(key: str) -> str:
    return key


async def test_tool_context_describes_the_call(store: Store, clock: Callable[[], datetime]) -> None:
    seen: list[ToolContext] = []

    @tool(description="Note.", effect="irreversible", requires_approval=False, timeout=45)
    async def note(text: str, *, ctx: ToolContext) -> dict[str, Any]:
        seen.append(ctx)
        return {"at": datetime(2026, 1, 2, 3, 4, 5), "text": text}

    agent, _ = agent_with(note, script=[tool_call("note", {"text": "hi"}), "ok"])
    rt, run_id = await run_once(store, agent, clock=clock)

    (ctx,) = seen
    (effect,) = await store.list_effects(run_id)
    assert (ctx.run_id, ctx.call_id, ctx.step, ctx.attempt) == (run_id, "call_1_1", 1, 1)
    assert ctx.idempotency_key == effect.idempotency_key
    assert ctx.lineage_id == run_id
    assert ctx.deadline is not None
    assert (ctx.deadline - clock()).total_seconds() == 45
    assert ctx.facts is rt.facts
    assert effect.result == {"at": "2026-01-02T03:04:05", "text": "hi"}


async def test_read_tools_run_again_but_mutations_do_not(store: Store) -> None:
    counts = {"read": 0, "write": 0}

    @tool(description="Read.", effect="read")
    def peek(key: str) -> int:
        counts["read"] += 1
        return counts["read"]

    @tool(description="Write.", effect="irreversible", requires_approval=False)
    def poke(key: str) -> int:
        counts["write"] += 1
        return counts["write"]

    agent, _ = agent_with(
        peek,
        poke,
        script=[
            [tool_call("peek", {"key": "a"}), tool_call("poke", {"key": "a"})],
            [tool_call("peek", {"key": "a"}), tool_call("poke", {"key": "a"})],
            "done",
        ],
    )
    _, run_id = await run_once(store, agent)

    assert counts == {"read": 2, "write": 1}
    state = await store.load_state(run_id)
    results = [(m.name, m.content) for m in state.messages if m.role == "tool"]
    assert results == [("peek", "1"), ("poke", "1"), ("peek", "2"), ("poke", "1")]
    effects = await store.list_effects(run_id)
    assert [(e.tool, e.call_id) for e in effects] == [
        ("peek", "call_1_1"),
        ("poke", "call_1_2"),
        ("peek", "call_2_1"),
    ]


async def test_a_mutation_whose_result_cannot_be_serialized_is_not_run_twice(
    store: Store,
) -> None:
    paid: list[int] = []

    class Receipt:
        """A provider SDK object: no JSON form."""

    @tool(description="Pay.", effect="irreversible", requires_approval=False)
    def pay(cents: int) -> Any:
        paid.append(cents)
        return Receipt()

    agent, _ = agent_with(
        pay,
        script=[tool_call("pay", {"cents": 100}), tool_call("pay", {"cents": 100}), "done"],
    )
    _, run_id = await run_once(store, agent)

    assert paid == [100]
    effects = await store.list_effects(run_id)
    assert effects[0].status != EffectStatus.FAILED
