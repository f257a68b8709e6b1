"""Cancel tells the truth (issue 26.4): cancelling a run while its tool runs answers that the
tool is still running and what happens next (the API: 202 with the run's state and the note),
not a plain "cancelled"; the tool is not stopped halfway, and once it ends the run's history
records what it did. A cancel with nothing in flight is the plain 200 it always was. And an
in-doubt page is settled over the API in one step from a fenced worker's late receipt."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from collections.abc import Callable
from typing import cast

from support.frozen_store import FrozenRenewals
from support.helpers import AUTH
from support.helpers import Api

from runtime import Agent
from runtime import Runtime
from runtime import ScriptedModel
from runtime import tool
from runtime import tool_call
from store import EffectStatus
from store import Store


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


async def test_an_in_doubt_page_is_settled_over_the_api_from_the_late_receipt(
    make_api: Callable[..., Awaitable[Api]],
) -> None:
    """A worker froze inside a payment; the API's worker took the run over and paged. The
    frozen one wakes with the receipt (kept on the page); one POST settles the page from it
    and the run goes on to its end (issue 26.2)."""
    entered, release = asyncio.Event(), asyncio.Event()

    @tool(description="Wire money.", effect="irreversible", requires_approval=False)
    async def wire(to: str) -> dict[str, str]:
        entered.set()
        await release.wait()
        return {"receipt": "re_123"}

    def wire_agent() -> Agent:
        script = ScriptedModel([tool_call("wire", {"to": "ACME"}), "done"])
        return Agent("wirer", model=script, tools=[wire])

    api = await make_api(agents=[wire_agent()])
    frozen = Runtime(
        cast(Store, FrozenRenewals(api.store)), [wire_agent()], worker_id="frozen", lease_ttl=0.3
    )
    driving = asyncio.create_task(frozen.start("wirer", "Pay ACME", run_id="w"))
    async with asyncio.timeout(10):
        await entered.wait()
    await asyncio.sleep(0.4)  # past the frozen worker's lease, by the database's clock
    assert await api.rt.recover() == ["w"]
    release.set()
    async with asyncio.timeout(10):
        await driving
    (page,) = await api.store.list_pages()
    assert "reported: completed" in page.detail

    response = await api.client.post(
        "/v1/runs/w/effects/call_1_1/resolve", json={"happened": True}, headers=AUTH
    )
    settled = await response.json()

    assert response.status == 200
    assert (settled["status"], settled["result"]) == ("completed", {"receipt": "re_123"})
    assert await api.store.list_pages() == []
    await api.background.drain()
    assert (await api.rt.get("w")).status == "done"
    again = await api.client.post(
        "/v1/runs/w/effects/call_1_1/resolve", json={"happened": False}, headers=AUTH
    )
    assert again.status == 400  # settled already: changes nothing


def booking_agent(entered: asyncio.Event, release: asyncio.Event, undone: list[str]) -> Agent:
    @tool(
        description="Hold a room.", effect="reversible", compensate="unhold",
        requires_approval=False,
    )  # fmt: skip
    async def hold(room: str) -> dict[str, str]:
        entered.set()
        await release.wait()
        return {"held": room}

    @tool(description="Give a room back.", effect="irreversible", requires_approval=False)
    async def unhold(room: str) -> dict[str, str]:
        undone.append(room)
        return {"released": room}

    model = ScriptedModel([tool_call("hold", {"room": "R1"}), "done"])
    return Agent("booker", model=model, tools=[hold, unhold])


async def test_a_cancel_that_asks_compensates_the_tool_in_flight_once_on_the_driving_worker(
    make_api: Callable[..., Awaitable[Api]],
) -> None:
    """The API's worker takes the cancel; another worker drives the run and learns of the
    choice only from the store (nothing in memory is shared): when its tool ends, the hold is
    given back once, with its own effect, and the run's end records both."""
    entered, release, undone = asyncio.Event(), asyncio.Event(), []
    api = await make_api(agents=[booking_agent(entered, release, undone)])
    driver = Runtime(api.store, [booking_agent(entered, release, undone)], worker_id="driver")
    driving = asyncio.create_task(driver.start("booker", "Hold R1", run_id="b"))
    async with asyncio.timeout(10):
        await entered.wait()

    response = await api.client.post(
        "/v1/runs/b/cancel", json={"reason": "no trip", "compensate": True}, headers=AUTH
    )
    view = await response.json()

    assert response.status == 202
    assert view["in_flight"] == [{"call_id": "call_1_1", "tool": "hold"}]
    assert "then compensated if it is reversible" in view["note"]
    assert undone == []  # nothing undone while the tool runs
    release.set()
    async with asyncio.timeout(10):
        await driving
    await api.background.drain()
    effects = {e.call_id: e for e in await api.store.list_effects("b")}
    assert effects["call_1_1"].status == EffectStatus.COMPLETED
    assert effects["call_1_1"].compensated_by == "undo:call_1_1"
    assert effects["undo:call_1_1"].status == EffectStatus.COMPLETED
    assert undone == ["R1"]
    assert (await api.rt.get("b")).status == "cancelled"
    # Asked again (a saga re-run, another worker's after-stop), nothing is undone twice.
    await ending_saga(api.rt, "b")
    await ending_saga(driver, "b")
    assert undone == ["R1"]


async def ending_saga(rt: Runtime, run_id: str) -> None:
    from runtime.runs import ending

    await ending.saga(rt._deps, await rt.get(run_id))


async def test_a_cancel_that_does_not_ask_leaves_the_tool_standing(
    make_api: Callable[..., Awaitable[Api]],
) -> None:
    entered, release, undone = asyncio.Event(), asyncio.Event(), []
    api = await make_api(agents=[booking_agent(entered, release, undone)])
    driving = asyncio.create_task(api.rt.start("booker", "Hold R1", run_id="k"))
    async with asyncio.timeout(10):
        await entered.wait()

    response = await api.client.post("/v1/runs/k/cancel", headers=AUTH)
    view = await response.json()

    assert response.status == 202
    assert "signoff runs rollback k" in view["note"]
    release.set()
    async with asyncio.timeout(10):
        await driving
    await api.background.drain()
    assert undone == []
    (effect,) = await api.store.list_effects("k")
    assert (effect.status, effect.compensated_by) == (EffectStatus.COMPLETED, None)
