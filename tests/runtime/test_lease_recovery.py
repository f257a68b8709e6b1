"""One job, long because each way a lease is lost has its test: leases.

One driver per run (docs/architecture.md rule 7): a live lease keeps other workers out, an
expired one is taken over by recover(), recovering twice is harmless, start() with a known id
resumes it, and a cancelled run's driver is refused its next write."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from datetime import timedelta
from typing import TypeVar
from typing import cast

import pytest
from runtime_scenarios import WORKER_ID
from runtime_scenarios import CountingModel
from runtime_scenarios import GatedModel
from runtime_scenarios import MovableClock
from runtime_scenarios import OpenDb
from runtime_scenarios import Worker
from runtime_scenarios import assert_well_formed
from runtime_scenarios import counter_agent
from runtime_scenarios import counting_policy
from runtime_scenarios import wait_for_lapse
from support.frozen_store import FrozenRenewals
from support.wrapped_store import WrappedStore

from runtime import Agent
from runtime import Budget
from runtime import Runtime
from runtime import ScriptedModel
from runtime import ToolContext
from runtime import errors
from runtime import tool
from runtime import tool_call
from runtime.approvals.policy import Policies
from runtime.approvals.policy import Policy
from runtime.records import SENSITIVE_MASK
from store import EffectStatus
from store import RunStatus
from store import Store
from store.records import utcnow

T = TypeVar("T")


async def until(check: Callable[[], Awaitable[bool]]) -> None:
    """Poll `check` for up to ten seconds."""
    for _ in range(1000):
        if await check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("gave up waiting")


async def finish(task: asyncio.Task[T]) -> T:
    """Await a background task, failing instead of hanging if it never ends."""
    async with asyncio.timeout(20):
        return await task


@dataclass
class Stalled:
    """A worker that started a 3-step run and now waits on the model for step 2."""

    rt: Runtime
    model: GatedModel
    task: asyncio.Task[str]
    run_id: str = "gated"


async def driving_into_the_gate(
    store: Store, worker_id: str, *, frozen: bool = False, lease: float = 0.3
) -> Stalled:
    """`frozen`: the worker stops renewing its (short) lease, as a SIGSTOPped one would."""
    model = GatedModel(ScriptedModel(counting_policy), at_turn=1)
    if frozen:
        seen = cast(Store, FrozenRenewals(store))
        rt = Runtime(seen, [counter_agent(model)], worker_id=worker_id, lease_ttl=lease)
    else:
        rt = Runtime(store, [counter_agent(model)], worker_id=worker_id)
    task = asyncio.create_task(
        rt.start("counter", "Count", run_id="gated", budget=Budget(max_steps=3))
    )
    async with asyncio.timeout(10):
        await model.waiting.wait()
    return Stalled(rt, model, task)


async def test_run_leased_by_a_live_worker_is_not_driven(store: Store) -> None:
    a = await driving_into_the_gate(store, "worker-a")
    model, run_id = a.model, a.run_id
    rt_b = Runtime(store, [counter_agent(model)], worker_id="worker-b")

    run = await rt_b.drive(run_id)
    again = await rt_b.start("counter", "Count", run_id=run_id)
    recovered = await rt_b.recover()

    assert (run.status, run.lease_owner, run.usage.steps) == (RunStatus.RUNNING, "worker-a", 1)
    assert again == run_id
    assert recovered == []
    assert model.calls == 2
    model.gate.set()
    await finish(a.task)
    final = await store.get_run(run_id)
    assert (final.stop_reason, final.usage.steps, model.calls) == ("step_budget", 3, 3)
    assert len(await store.list_runs()) == 1
    assert len(await store.list_effects(run_id)) == 3


async def test_expired_lease_is_taken_over_and_the_old_driver_is_refused(store: Store) -> None:
    a = await driving_into_the_gate(store, "worker-a", frozen=True)
    run_id = a.run_id
    fresh = CountingModel(ScriptedModel(counting_policy))
    rt_b = Runtime(store, [counter_agent(fresh)], worker_id="worker-b")
    await wait_for_lapse(store, owner="worker-b")

    assert await rt_b.recover() == [run_id]
    taken_over = await store.history(run_id)
    a.model.gate.set()
    assert await finish(a.task) == run_id

    run = await store.get_run(run_id)
    assert (run.status, run.stop_reason, run.usage.steps) == (RunStatus.FAILED, "step_budget", 3)
    assert fresh.calls == 2
    assert await store.history(run_id) == taken_over
    effects = await store.list_effects(run_id)
    assert [e.call_id for e in effects] == ["call_1_1", "call_2_1", "call_3_1"]
    assert_well_formed((await store.load_state(run_id)).messages)


async def test_a_lapsed_lease_is_taken_over_when_it_lapses_not_a_poll_later(
    store: Store,
) -> None:
    a = await driving_into_the_gate(store, "worker-a", frozen=True, lease=1.0)
    fresh = CountingModel(ScriptedModel(counting_policy))
    rt_b = Runtime(store, [counter_agent(fresh)], worker_id="worker-b")
    lapses_at = (await store.get_run(a.run_id)).lease_expires_at
    following = asyncio.create_task(rt_b.follow_lapses(poll=60))
    try:
        await until(lambda: _owner_is(store, a.run_id, "worker-b"))
        taken_at = await store.database_now()
        a.model.gate.set()
        await finish(a.task)
        await until(lambda: _status_is(store, a.run_id, RunStatus.FAILED))  # its step budget
    finally:
        following.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await following
    assert lapses_at is not None
    assert 0 <= (taken_at - lapses_at).total_seconds() < 2  # not the 60 s poll
    assert fresh.calls == 2


async def _owner_is(store: Store, run_id: str, owner: str) -> bool:
    run = await store.get_run(run_id)
    return run.lease_owner == owner or (run.lease_owner is None and run.usage.steps > 1)


async def _status_is(store: Store, run_id: str, status: RunStatus) -> bool:
    return (await store.get_run(run_id)).status == status


async def test_a_long_tool_keeps_its_lease_alive(store: Store, clock: MovableClock) -> None:
    entered, release = asyncio.Event(), asyncio.Event()

    @tool(description="Slow export.", effect="read")
    async def export() -> str:
        entered.set()
        await release.wait()
        return "exported"

    agent = Agent("exporter", model=ScriptedModel([tool_call("export"), "done"]), tools=[export])
    rt = Runtime(store, [agent], worker_id="busy", lease_ttl=0.3, clock=clock)
    driving = asyncio.create_task(rt.start("exporter", "Export", run_id="x"))
    async with asyncio.timeout(10):
        await entered.wait()
    first = (await store.get_run("x")).lease_expires_at

    async def renewed() -> bool:
        return (await store.get_run("x")).lease_expires_at != first

    await until(renewed)
    await asyncio.sleep(0.35)  # longer than the lease: only renewals keep it
    clock.advance(minutes=10)  # the other worker's clock is no judge of it
    other = Runtime(store, [agent], worker_id="other", clock=clock)

    assert await other.recover() == []
    release.set()
    await finish(driving)
    assert (await store.get_run("x")).status == RunStatus.DONE


async def test_start_refuses_an_unknown_agent_or_an_empty_task(store: Store) -> None:
    rt = Runtime(store, [counter_agent()], worker_id="w")

    with pytest.raises(errors.UnknownAgent, match="no agent 'nobody'; this runtime has: counter"):
        await rt.start("nobody", "Count")
    with pytest.raises(errors.InvalidRequest, match="needs a task"):
        await rt.start("counter", "   ")
    assert await rt.list() == []


async def test_recover_twice_is_harmless(store: Store) -> None:
    model = CountingModel(ScriptedModel(counting_policy))
    rt = Runtime(store, [counter_agent(model)], worker_id="w")
    done = await rt.start("counter", "Count", budget=Budget(max_steps=2))
    before = await store.history(done)

    assert await rt.recover() == []
    assert await rt.recover() == []

    assert await store.history(done) == before
    assert model.calls == 2


async def test_recover_in_two_workers_at_once_drives_each_run_once(
    run_worker: Worker, open_db: OpenDb
) -> None:
    for run_id in ("one", "two"):
        assert run_worker("counter", run_id, "Count", die="tick@2", max_steps=4).killed
    store = await open_db()
    await wait_for_lapse(store)
    later = utcnow() + timedelta(minutes=10)
    models = [CountingModel(ScriptedModel(counting_policy)) for _ in range(2)]
    workers = [
        Runtime(store, [counter_agent(m)], worker_id=f"w{i}", clock=lambda: later)
        for i, m in enumerate(models)
    ]

    await asyncio.gather(*(w.recover() for w in workers))

    assert sum(m.calls for m in models) == 4
    for run_id in ("one", "two"):
        run = await store.get_run(run_id)
        assert (run.stop_reason, run.usage.steps) == ("step_budget", 4)
        assert len(await store.list_effects(run_id)) == 4


async def test_start_with_an_existing_id_resumes_without_duplicating(
    run_worker: Worker, open_db: OpenDb
) -> None:
    assert run_worker("counter", "count-8", "Count", die="tick@3", max_steps=8).killed
    model = CountingModel(ScriptedModel(counting_policy))
    rt = Runtime(await open_db(), [counter_agent(model)], worker_id=WORKER_ID)

    assert await rt.start("counter", "Count", run_id="count-8") == "count-8"
    assert await rt.start("counter", "Count", run_id="count-8") == "count-8"
    with pytest.raises(errors.InvalidRequest, match="exists already"):
        await rt.start("counter", "Count something else", run_id="count-8")

    (run,) = await rt.list()
    assert (run.id, run.task, run.stop_reason, run.usage.steps) == (
        "count-8",
        "Count",
        "step_budget",
        8,
    )
    assert model.calls == 5
    assert len(await rt.store.list_effects("count-8")) == 8


async def test_start_with_an_existing_id_of_another_agent_is_refused(store: Store) -> None:
    other = Agent("other", model=ScriptedModel(["hi"]))
    rt = Runtime(store, [counter_agent(), other], worker_id="w")
    run_id = await rt.start("other", "Say hi")

    with pytest.raises(errors.InvalidRequest, match="agent 'other'"):
        await rt.start("counter", "Count", run_id=run_id)


# cancel


@pytest.mark.parametrize("where", ["same-runtime", "other-runtime"])
async def test_cancel_while_the_model_thinks_refuses_the_drivers_next_write(
    store: Store, where: str
) -> None:
    driver = await driving_into_the_gate(store, "driver")
    model, run_id = driver.model, driver.run_id
    canceller = driver.rt if where == "same-runtime" else Runtime(store, [], worker_id="api")

    cancelling = asyncio.create_task(canceller.cancel(run_id, by="U_BOSS", reason="stop"))

    async def cancelled() -> bool:
        return (await store.get_run(run_id)).status == RunStatus.CANCELLED

    await until(cancelled)
    model.gate.set()
    await finish(driver.task)
    run = await finish(cancelling)

    assert (run.status, run.stop_reason) == (RunStatus.CANCELLED, "cancelled")
    assert model.calls == 2
    state = await store.load_state(run_id)
    assert [m.role for m in state.messages].count("assistant") == 1
    assert len(await store.list_effects(run_id)) == 1
    assert "cancel" in [e.action for e in await store.list_events(run_id=run_id)]


async def test_cancel_while_a_tool_runs_still_records_what_it_did(store: Store) -> None:
    entered, release = asyncio.Event(), asyncio.Event()

    @tool(description="Ship a parcel.", effect="irreversible", requires_approval=False)
    async def ship(parcel: str) -> str:
        entered.set()
        await release.wait()
        return f"shipped {parcel}"

    model = CountingModel(ScriptedModel([tool_call("ship", {"parcel": "p1"}), "done"]))
    rt = Runtime(store, [Agent("shipper", model=model, tools=[ship])], worker_id="w")
    driving = asyncio.create_task(rt.start("shipper", "Ship p1", run_id="ship"))
    async with asyncio.timeout(10):
        await entered.wait()

    await Runtime(store, [], worker_id="api").cancel("ship")
    release.set()
    await finish(driving)

    run = await store.get_run("ship")
    assert (run.status, run.stop_reason, model.calls) == (RunStatus.CANCELLED, "cancelled", 1)
    (effect,) = await store.list_effects("ship")
    assert (effect.status, effect.result) == (EffectStatus.COMPLETED, "shipped p1")
    state = await store.load_state("ship")
    assert state.messages[-1].content == "shipped p1"
    assert_well_formed(state.messages)


async def test_cancel_of_a_finished_run_is_refused(store: Store) -> None:
    rt = Runtime(store, [Agent("greeter", model=ScriptedModel(["hi"]))], worker_id="w")
    run_id = await rt.start("greeter", "Say hi")
    before = await store.history(run_id)

    with pytest.raises(errors.InvalidRequest, match="already done"):
        await rt.cancel(run_id)
    assert await store.history(run_id) == before


async def test_cancelled_run_is_neither_resumed_nor_recovered(store: Store) -> None:
    model = CountingModel(ScriptedModel(counting_policy))
    rt = Runtime(store, [counter_agent(model)], worker_id="w")
    gated = GatedModel(ScriptedModel(counting_policy), at_turn=0)
    rt_gated = Runtime(store, [counter_agent(gated)], worker_id="g")
    driving = asyncio.create_task(rt_gated.start("counter", "Count", run_id="c"))
    async with asyncio.timeout(10):
        await gated.waiting.wait()
    await rt.cancel("c")
    gated.gate.set()
    await finish(driving)

    with pytest.raises(errors.InvalidRequest, match="cancelled"):
        await rt.resume("c")
    assert await rt.recover() == []
    assert (await rt.drive("c")).status == RunStatus.CANCELLED
    with pytest.raises(errors.InvalidRequest, match="already cancelled"):
        await rt.cancel("c")
    assert model.calls == 0


async def take_over_frozen(
    store: Store,
    make_agent: Callable[[], Agent],
    run_id: str,
    entered: asyncio.Event,
    *,
    old: str = "stalled",
    new: str = "taker",
) -> tuple[Runtime, asyncio.Task[str]]:
    """Start `run_id` on a worker `old` whose lease renewals freeze; once its tool has been
    entered, worker `new` takes the run over. The new runtime, and the old one's drive."""
    frozen = cast(Store, FrozenRenewals(store))
    stalled = Runtime(frozen, [make_agent()], worker_id=old, lease_ttl=0.3)
    task = asyncio.create_task(stalled.start(make_agent().name, "the task", run_id=run_id))
    async with asyncio.timeout(10):
        await entered.wait()
    taker = Runtime(store, [make_agent()], worker_id=new)
    await wait_for_lapse(store, owner=new)
    assert await taker.recover() == [run_id]
    return taker, task


async def test_old_driver_finishing_a_tool_after_a_takeover_stops_quietly(store: Store) -> None:
    entered, release = asyncio.Event(), asyncio.Event()
    runs: list[int] = []

    @tool(
        description="Sync a mirror.",
        effect="irreversible",
        requires_approval=False,
        idempotent=True,
    )
    async def sync_mirror(name: str, *, ctx: ToolContext) -> str:
        runs.append(ctx.attempt)
        if len(runs) == 1:
            entered.set()
            await release.wait()
        return f"synced {name}"

    def mirror_agent() -> Agent:
        script = ScriptedModel([tool_call("sync_mirror", {"name": "eu"}), "done"])
        return Agent("mirror", model=script, tools=[sync_mirror])

    _, driving = await take_over_frozen(store, mirror_agent, "m", entered, old="old", new="new")
    assert (await store.get_run("m")).status == RunStatus.DONE
    done = await store.history("m")

    release.set()
    async with asyncio.timeout(10):
        assert await driving == "m"

    assert runs == [1, 2]
    assert await store.history("m") == done
    (effect,) = await store.list_effects("m")
    assert (effect.status, effect.result) == (EffectStatus.COMPLETED, "synced eu")


async def test_a_stalled_driver_whose_tool_acts_after_a_human_said_it_did_not_pages(
    store: Store,
) -> None:
    entered, release = asyncio.Event(), asyncio.Event()
    sent: list[str] = []

    @tool(description="Wire money.", effect="irreversible", requires_approval=False)
    async def wire(to: str) -> str:
        entered.set()
        await release.wait()
        sent.append(to)
        return f"wired {to}"

    def wire_agent() -> Agent:
        return Agent(
            "wirer", model=ScriptedModel([tool_call("wire", {"to": "ACME"}), "done"]), tools=[wire]
        )

    taker, driving = await take_over_frozen(store, wire_agent, "w", entered)
    assert (await store.get_effect("w", "call_1_1")).status == EffectStatus.IN_DOUBT
    await taker.resolve("w", "call_1_1", happened=False, by="U0ONCALL")

    release.set()  # the stalled worker wakes up and its tool acts after all
    await finish(driving)

    assert sent == ["ACME"]
    assert (await store.get_effect("w", "call_1_1")).status == EffectStatus.FAILED
    (page,) = await store.list_pages()
    assert page.reason == "acted_late"
    assert "wire" in page.detail
    assert "did complete" in page.detail
    assert "did not happen, according to U0ONCALL" in page.detail


async def test_a_frozen_workers_late_result_is_evidence_on_the_page_and_settles_it(
    store: Store,
) -> None:
    """Frozen past its lease while its tool ran: the worker that took over marks the call in
    doubt and pages; the frozen one wakes with the receipt, which is refused as a write but
    kept on the open page; one `resolve` settles the page from it, and the run goes on."""
    entered, release = asyncio.Event(), asyncio.Event()
    sent: list[str] = []

    @tool(description="Wire money.", effect="irreversible", requires_approval=False)
    async def wire(to: str) -> dict[str, str]:
        entered.set()
        await release.wait()
        sent.append(to)
        return {"receipt": "re_123"}

    def wire_agent() -> Agent:
        return Agent(
            "wirer", model=ScriptedModel([tool_call("wire", {"to": "ACME"}), "done"]), tools=[wire]
        )

    taker, driving = await take_over_frozen(store, wire_agent, "w", entered)
    (page,) = await store.list_pages()
    assert (await store.get_effect("w", "call_1_1")).status == EffectStatus.IN_DOUBT

    release.set()  # the frozen worker wakes up: its tool did act
    await finish(driving)

    effect = await store.get_effect("w", "call_1_1")
    assert effect.status == EffectStatus.IN_DOUBT  # not overwritten
    (page,) = await store.list_pages()
    assert "The worker that lost its lease (stalled) reported: completed at" in page.detail
    assert "re_123" in page.detail
    late = [e for e in await store.list_events(run_id="w") if e.action == "late_result"]
    assert [e.detail["result"] for e in late] == [{"receipt": "re_123"}]

    settled = await taker.resolve("w", "call_1_1", happened=True, by="U0ONCALL")
    run = await taker.resume("w")

    assert (settled.status, settled.result) == (EffectStatus.COMPLETED, {"receipt": "re_123"})
    assert await store.list_pages() == []  # settled: none open
    assert run.status == RunStatus.DONE
    assert sent == ["ACME"]


CARD_NUMBER = "5500-0000-0000-0004"
CARD = {"card": {"card_number": CARD_NUMBER, "last4": "0004"}}


async def issue_card_late(store: Store, *, resolved_as_not_done: bool = False) -> Runtime:
    """A worker issues a card while frozen past its lease, under policies that mark the card
    number sensitive; the worker that took the run over is returned. With
    `resolved_as_not_done`, a person said the card was not issued before the frozen worker
    woke up."""
    entered, release = asyncio.Event(), asyncio.Event()

    @tool(
        description="Issue a card.",
        effect="irreversible",
        requires_approval=False,
        sensitive=["to"],
    )
    async def issue_card(to: str) -> dict[str, object]:
        entered.set()
        await release.wait()
        return CARD

    def card_agent() -> Agent:
        model = ScriptedModel([tool_call("issue_card", {"to": "ACME"}), "done"])
        return Agent("issuer", model=model, tools=[issue_card])

    policies = Policies(tools={"issue_card": Policy(sensitive_results=("card_number",))})
    frozen = cast(Store, FrozenRenewals(store))
    stalled = Runtime(frozen, [card_agent()], worker_id="stalled", lease_ttl=0.3, policies=policies)
    driving = asyncio.create_task(stalled.start("issuer", "Card for ACME", run_id="c"))
    async with asyncio.timeout(10):
        await entered.wait()
    taker = Runtime(store, [card_agent()], worker_id="taker", policies=policies)
    await wait_for_lapse(store, owner="taker")
    assert await taker.recover() == ["c"]
    if resolved_as_not_done:
        await taker.resolve("c", "call_1_1", happened=False, by="U0ONCALL")
    release.set()  # the frozen worker wakes up with the card it issued
    await finish(driving)
    return taker


async def test_a_late_results_sensitive_fields_are_masked_on_the_page_and_in_the_log(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """The evidence the fenced-off worker writes on the page and logs masks the card number;
    the audit keeps it whole, so the ledger settled from it does too."""
    with caplog.at_level(logging.WARNING, logger="signoff.journal"):
        taker = await issue_card_late(store)

    (page,) = await store.list_pages()
    assert "The worker that lost its lease (stalled) reported: completed at" in page.detail
    assert "'last4': '0004'" in page.detail
    assert CARD_NUMBER not in page.detail
    assert "ACME" not in page.detail  # the sensitive argument, as the page names the call
    assert SENSITIVE_MASK in page.detail
    (said,) = [r.getMessage() for r in caplog.records if "kept as evidence" in r.getMessage()]
    assert "'last4': '0004'" in said
    assert CARD_NUMBER not in said
    settled = await taker.resolve("c", "call_1_1", happened=True, by="U0ONCALL")
    assert settled.result == CARD
    assert (await store.get_effect("c", "call_1_1")).result == CARD


async def test_a_late_results_sensitive_fields_are_masked_on_the_acted_late_page(
    store: Store,
) -> None:
    await issue_card_late(store, resolved_as_not_done=True)

    (page,) = await store.list_pages()
    assert page.reason == "acted_late"
    assert "'last4': '0004'" in page.detail
    assert CARD_NUMBER not in page.detail
    assert "ACME" not in page.detail
    assert SENSITIVE_MASK in page.detail
    late = [e for e in await store.list_events(run_id="c") if e.action == "late_result"]
    assert [e.detail["result"] for e in late] == [CARD]  # the audit keeps it whole


@dataclass(eq=False)
class SlowRenewals(WrappedStore):
    """A store whose lease renewals take `delay` seconds, so a release can come mid-renewal."""

    delay: float
    renewing: asyncio.Event = field(init=False, default_factory=asyncio.Event)
    """Set once a renewal has begun."""

    async def renew_lease(self, *args: object, **kwargs: object) -> bool:
        self.renewing.set()
        await asyncio.sleep(self.delay)
        return await self.store.renew_lease(*args, **kwargs)  # type: ignore[arg-type]


async def test_a_release_during_a_renewal_waits_for_it_and_reports_no_lost_lease(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    slow = SlowRenewals(store, delay=0.2)
    at_tool = asyncio.Event()

    @tool(description="Waits for the first renewal.", effect="read")
    async def wait_for_renewal() -> str:
        at_tool.set()
        await slow.renewing.wait()  # the run ends while its lease is being renewed
        return "ok"

    model = ScriptedModel([tool_call("wait_for_renewal"), "done"])
    agent = Agent("waiter", model=model, tools=[wait_for_renewal])
    rt = Runtime(cast(Store, slow), [agent], worker_id="w", lease_ttl=0.3)
    with caplog.at_level("WARNING", logger="signoff.lease"):
        await asyncio.wait_for(rt.start("waiter", "Wait", run_id="w1"), 10)
        await asyncio.sleep(slow.delay + 0.1)  # a renewal still under way has ended by now
    await rt.scheduler.stop()

    assert (await store.get_run("w1")).status == RunStatus.DONE
    assert (await store.get_run("w1")).lease_owner is None  # released, not renewed after
    assert not [r for r in caplog.records if "lost the lease" in r.getMessage()]
