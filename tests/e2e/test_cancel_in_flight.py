"""Cancel tells the truth (issue 26.4): cancelling a run while its tool runs answers that the
tool is still running and what happens next (the API: 202 with the run's state and the note),
not a plain "cancelled"; the tool is not stopped halfway, and once it ends the run's history
records what it did. A cancel with nothing in flight is the plain 200 it always was."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from runtime import Agent, ScriptedModel, tool, tool_call
from store import EffectStatus

from .helpers import AUTH, Api


def slow_agent(entered: asyncio.Event, release: asyncio.Event) -> Agent:
    @tool(description="Export the ledger.", effect="irreversible", requires_approval=False)
    async def export_ledger(month: str) -> dict[str, str]:
        entered.set()
        await release.wait()
        return {"file": f"ledger-{month}.csv"}

    model = ScriptedModel([tool_call("export_ledger", {"month": "2026-11"}), "done"])
    return Agent("exporter", model=model, tools=[export_ledger])


async def test_cancel_while_a_tool_runs_answers_202_with_what_happens_next(
    make_api: Callable[..., Awaitable[Api]],
) -> None:
    entered, release = asyncio.Event(), asyncio.Event()
    api = await make_api(agents=[slow_agent(entered, release)])
    driving = asyncio.create_task(api.rt.start("exporter", "Export November", run_id="x"))
    async with asyncio.timeout(10):
        await entered.wait()

    response = await api.client.post(
        "/v1/runs/x/cancel", json={"reason": "wrong month"}, headers=AUTH
    )
    view = await response.json()

    assert response.status == 202
    assert view["status"] == "cancelled"
    assert view["in_flight"] == [{"call_id": "call_1_1", "tool": "export_ledger"}]
    assert "export_ledger (call_1_1) is still running" in view["note"]
    assert "takes no further step" in view["note"]
    release.set()
    async with asyncio.timeout(10):
        await driving
    (effect,) = await api.store.list_effects("x")
    assert (effect.status, effect.result) == (
        EffectStatus.COMPLETED,
        {"file": "ledger-2026-11.csv"},
    )
    tool_messages = [m for m in (await api.store.load_state("x")).messages if m.role == "tool"]
    assert len(tool_messages) == 1  # the run's end records the effect that completed
    assert (await api.rt.get("x")).status == "cancelled"


async def test_cancel_with_nothing_in_flight_is_a_plain_200(api: Api) -> None:
    status = await api.client.post(
        "/v1/runs", json={"agent": "refund-agent", "task": "Refund order 4471"}, headers=AUTH
    )
    run_id = (await status.json())["id"]
    await api.parked(run_id)

    response = await api.client.post(f"/v1/runs/{run_id}/cancel", headers=AUTH)
    view = await response.json()

    assert response.status == 200
    assert view["status"] == "cancelled"
    assert "in_flight" not in view
