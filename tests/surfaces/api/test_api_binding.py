"""Issue 25 over the HTTP API: a second refund of an order for another amount is refused as
a plain approval (409, the conflict in words, nothing changed) and made with
`"separate": true`; `GET /v1/runs/{id}` lists each decided call as proposed, approved and
executed; an edit that changes what the call acts on is a 400 that changes nothing."""

from __future__ import annotations

from collections.abc import Awaitable
from collections.abc import Callable
from typing import Any

from support.helpers import AUTH
from support.helpers import Api
from support.helpers import eventually

from examples import world

from .test_api_decisions import decide
from .test_api_decisions import done

MakeApi = Callable[..., Awaitable[Api]]


async def park(api: Api, run_id: str, dollars: int) -> str:
    body = {"agent": "refund-agent", "task": f"Refund order 4471 for ${dollars}", "run_id": run_id}
    response = await api.client.post("/v1/runs", json=body, headers=AUTH)
    assert response.status == 201
    [pending] = (await api.parked(run_id))["pending_approvals"]
    return str(pending["id"])


async def run_view(api: Api, run_id: str) -> dict[str, Any]:
    response = await api.client.get(f"/v1/runs/{run_id}", headers=AUTH)
    assert response.status == 200
    return dict(await response.json())


def refunded() -> list[int]:
    return [cents for kind, _, cents, _ in world.payments() if kind == "refund"]


async def test_a_conflict_is_a_409_until_approved_as_separate(make_api: MakeApi) -> None:
    api = await make_api()
    first = await park(api, "run-a", 25)
    assert (await decide(api, first, decision="approved", by="U0ALICE"))[0] == 200
    await eventually(lambda: done(api, "run-a"))
    second = await park(api, "run-c", 20)

    status, refused = await decide(api, second, decision="approved", by="U0BOB")

    assert status == 409
    assert "amount_cents 2500 by run run-a (approved by U0ALICE" in refused["error"]
    assert "approve it as a separate issue_refund" in refused["error"]
    assert refunded() == [2500]
    status, approved = await decide(api, second, decision="approved", by="U0BOB", separate=True)
    assert status == 200, approved
    assert approved["key_suffix"] == second
    await eventually(lambda: done(api, "run-c"))
    assert refunded() == [2500, 2000]
    [call] = (await run_view(api, "run-c"))["calls"]
    assert (call["separate"], call["conflict_run"]) == (True, "run-a")
    assert [call[k]["amount_cents"] for k in ("proposed", "approved", "executed")] == [2000] * 3


async def test_an_edit_shows_in_the_run_view_and_one_of_the_order_is_refused(
    make_api: MakeApi,
) -> None:
    from runtime import Policies
    from runtime import Policy

    api = await make_api(policies=Policies(tools={"issue_refund": Policy(allow_edit=True)}))
    asked = await park(api, "run-e", 25)
    other_order = {"order_id": "1002", "amount_cents": 2500, "restocking_fee_cents": 0}
    status, refused = await decide(api, asked, decision="approved", by="U0BOB", args=other_order)
    assert status == 400
    assert "changes what issue_refund acts on (order_id" in refused["error"]
    edited = {"order_id": "4471", "amount_cents": 2000, "restocking_fee_cents": 0}

    status, answer = await decide(api, asked, decision="approved", by="U0BOB", args=edited)

    assert status == 200, answer
    assert answer["edited"] is True
    await eventually(lambda: done(api, "run-e"))
    [call] = (await run_view(api, "run-e"))["calls"]
    assert [call[k]["amount_cents"] for k in ("proposed", "approved", "executed")] == [
        2500,
        2000,
        2000,
    ]
    assert call["edited"] is True
    assert refunded() == [2000]
