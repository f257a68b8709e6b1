"""The runtime tells its Notifier when a run ends and when an effect needs a human, only after
the record is committed; a notifier that fails never fails a run."""

from __future__ import annotations

import asyncio

from runtime_scenarios import RecordingNotifier
from runtime_scenarios import counter_agent

from runtime import Agent
from runtime import Budget
from runtime import Runtime
from runtime import ScriptedModel
from runtime import tool
from runtime import tool_call
from store import Approval
from store import Page
from store import Run
from store import RunStatus
from store import Store


class BrokenNotifier:
    """Every notification fails, like Slack during an outage."""

    async def approval_requested(self, approval: Approval, run: Run | None) -> None:
        raise ConnectionError("slack is down")

    async def approval_decided(self, approval: Approval, run: Run | None) -> None:
        raise ConnectionError("slack is down")

    async def reminder_due(self, approval: Approval, run: Run | None, *, escalated: bool) -> None:
        raise ConnectionError("slack is down")

    async def effect_needs_human(self, page: Page, run: Run | None) -> None:
        raise ConnectionError("slack is down")

    async def run_finished(self, run: Run) -> None:
        raise ConnectionError("slack is down")


@tool(description="Wire money.", effect="irreversible", requires_approval=False, timeout=0.1)
async def wire(cents: int) -> str:
    await asyncio.sleep(30)
    return "wired"


def wirer() -> Agent:
    return Agent(
        "wirer", model=ScriptedModel([tool_call("wire", {"cents": 5}), "ok"]), tools=[wire]
    )


async def test_run_finished_is_told_once_with_the_committed_run(store: Store) -> None:
    notifier = RecordingNotifier()
    rt = Runtime(store, [counter_agent()], notifier=notifier, worker_id="w")

    run_id = await rt.start("counter", "Count", budget=Budget(max_steps=2))

    (finished,) = notifier.finished
    assert finished == await rt.get(run_id)
    assert (finished.status, finished.stop_reason) == (RunStatus.FAILED, "step_budget")


async def test_a_page_is_announced_after_it_is_stored(store: Store) -> None:
    stored: list[list[Page]] = []

    class Checking(RecordingNotifier):
        async def effect_needs_human(self, page: Page, run: Run | None) -> None:
            stored.append(await store.list_pages())
            await super().effect_needs_human(page, run)

    rt = Runtime(store, [wirer()], notifier=Checking(), worker_id="w")
    await rt.start("wirer", "Wire 5 cents")

    ((page,),) = stored
    assert (page.call_id, page.reason) == ("call_1_1", "in_doubt")


async def test_a_broken_notifier_never_fails_a_run(store: Store) -> None:
    rt = Runtime(store, [wirer(), counter_agent()], notifier=BrokenNotifier(), worker_id="w")

    counted = await rt.start("counter", "Count", budget=Budget(max_steps=1))
    wired = await rt.start("wirer", "Wire 5 cents")

    assert (await rt.get(counted)).stop_reason == "step_budget"
    assert (await rt.get(wired)).stop_reason == "in_doubt"
    (page,) = await store.list_pages()
    assert page.run_id == wired


async def test_the_default_notifier_tells_nobody(store: Store) -> None:
    rt = Runtime(store, [counter_agent()], worker_id="w")

    run_id = await rt.start("counter", "Count", budget=Budget(max_steps=1))
    assert (await rt.get(run_id)).status == RunStatus.FAILED


async def test_the_notifier_given_at_construction_is_the_one_told(store: Store) -> None:
    """Everything is passed at construction: the facade has no notifier to set later."""
    notifier = RecordingNotifier()
    rt = Runtime(store, [counter_agent()], notifier, worker_id="w")

    run_id = await rt.start("counter", "Count", budget=Budget(max_steps=1))

    assert [run.id for run in notifier.finished] == [run_id]
    assert not any(hasattr(Runtime, name) for name in ("notifier", "telemetry", "on_due"))
