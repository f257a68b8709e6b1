"""`GET /v1/approvals` and `GET /v1/runs` over real HTTP (filters, cursor pages, bad queries
that change nothing), and a run's view saying how it ended: its answer and its decisions."""

from __future__ import annotations

from collections.abc import Awaitable
from collections.abc import Callable
from typing import Any

import pytest
from support.helpers import AUTH
from support.helpers import Api
from support.helpers import eventually

from examples import world
from runtime import Policies
from runtime import Policy

REFUND = {"agent": "refund-agent", "task": "Refund order 4471"}
MakeApi = Callable[..., Awaitable[Api]]


async def get(api: Api, path: str) -> tuple[int, dict[str, Any]]:
    response = await api.client.get(path, headers=AUTH)
    return response.status, await response.json()


async def ask(api: Api, approval_id: str, tool: str = "wire", **extra: Any) -> None:
    body = {"tool": tool, "args": {"n": approval_id}, "approval_id": approval_id} | extra
    response = await api.client.post("/v1/approvals", json=body, headers=AUTH)
    assert response.status == 201, await response.text()


async def park(api: Api, run_id: str) -> str:
    response = await api.client.post("/v1/runs", json=REFUND | {"run_id": run_id}, headers=AUTH)
    assert response.status == 201
    [pending] = (await api.parked(run_id))["pending_approvals"]
    return str(pending["id"])


async def decide(api: Api, approval_id: str, **body: Any) -> dict[str, Any]:
    response = await api.client.post(
        f"/v1/approvals/{approval_id}/decision", json=body, headers=AUTH
    )
    assert response.status == 200, await response.text()
    return dict(await response.json())


async def all_pages(api: Api, path: str, key: str) -> list[list[str]]:
    pages: list[list[str]] = []
    cursor = None
    while True:
        joiner = "&" if "?" in path else "?"
        status, body = await get(api, path + (f"{joiner}cursor={cursor}" if cursor else ""))
        assert status == 200, body
        pages.append([item["id"] for item in body[key]])
        cursor = body["next_cursor"]
        if cursor is None:
            return pages


async def test_approvals_list_pending_ones_oldest_first_in_cursor_pages(api: Api) -> None:
    for n in range(5):
        await ask(api, f"a{n}")
    await decide(api, "a2", decision="declined", by="U0BOSS", reason="no")
    pages = await all_pages(api, "/v1/approvals?state=pending&limit=2", "approvals")
    assert pages == [["a0", "a1"], ["a3", "a4"]]
    assert await all_pages(api, "/v1/approvals?state=declined", "approvals") == [["a2"]]


async def test_a_cursor_stays_put_while_new_approvals_arrive(api: Api) -> None:
    for n in range(3):
        await ask(api, f"a{n}")
    _, first = await get(api, "/v1/approvals?limit=2")
    await ask(api, "a9")
    _, second = await get(api, f"/v1/approvals?limit=2&cursor={first['next_cursor']}")
    assert [a["id"] for a in second["approvals"]] == ["a2", "a9"]
    assert second["next_cursor"] is None


async def test_approvals_filter_by_tool_requester_and_run(api: Api) -> None:
    await ask(api, "w1", "wire", requested_by="alice")
    await ask(api, "w2", "wire", requested_by="bob")
    await ask(api, "d1", "delete_user", requested_by="alice")
    in_run = await park(api, "r1")
    _, by_tool = await get(api, "/v1/approvals?tool=wire")
    assert [a["id"] for a in by_tool["approvals"]] == ["w1", "w2"]
    _, by_alice = await get(api, "/v1/approvals?requested_by=alice")
    assert [a["id"] for a in by_alice["approvals"]] == ["w1", "d1"]
    _, both = await get(api, "/v1/approvals?requested_by=alice&tool=delete_user")
    assert [a["id"] for a in both["approvals"]] == ["d1"]
    _, of_run = await get(api, "/v1/approvals?run_id=r1&state=pending")
    assert [a["id"] for a in of_run["approvals"]] == [in_run]
    assert of_run["approvals"][0]["tool"] == "issue_refund"


async def test_runs_list_newest_first_filtered_and_paged(api: Api) -> None:
    for run_id in ("r1", "r2", "r3"):
        await park(api, run_id)
    pages = await all_pages(api, "/v1/runs?status=waiting_approval&limit=2", "runs")
    assert pages == [["r3", "r2"], ["r1"]]
    _, done = await get(api, "/v1/runs?status=done")
    assert done == {"runs": [], "next_cursor": None}
    _, by_agent = await get(api, "/v1/runs?agent=refund-agent&limit=1")
    assert [r["id"] for r in by_agent["runs"]] == ["r3"]
    assert "lease_owner" not in by_agent["runs"][0]


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("/v1/approvals?state=maybe", "unknown approval state 'maybe'"),
        ("/v1/approvals?colour=red", "unknown query parameter(s): colour"),
        ("/v1/approvals?cursor=bm9wZQ", "is not a cursor this server gave out"),
        ("/v1/approvals?cursor=%25%25", "is not a cursor this server gave out"),
        ("/v1/approvals?limit=0", "limit: '0' is not a number from 1 to 500"),
        ("/v1/approvals?limit=%C2%B2", "is not a number from 1 to 500"),  # a superscript two
        ("/v1/approvals?limit=" + "9" * 5000, "is not a number from 1 to 500"),
        ("/v1/runs?status=rolled_back", "unknown status 'rolled_back'"),
        ("/v1/runs?run_id=r1", "unknown query parameter(s): run_id"),
    ],
)
async def test_a_bad_list_query_is_a_400_naming_what_is_wrong(
    api: Api, query: str, reason: str
) -> None:
    await ask(api, "a0")
    status, body = await get(api, query)
    assert status == 400
    assert reason in body["error"]
    assert await api.counts() == (0, 1)


async def test_listing_needs_a_token_with_a_reading_scope(api: Api) -> None:
    response = await api.client.get("/v1/approvals")
    assert response.status == 401
    response = await api.client.get("/v1/runs", headers={"Authorization": "Bearer wrong"})
    assert response.status == 401


async def test_a_declined_runs_view_has_its_answer_and_the_decision(api: Api) -> None:
    approval_id = await park(api, "r1")
    await decide(api, approval_id, decision="declined", by="U0BOSS", reason="fraud risk")

    async def finished() -> dict[str, Any] | None:
        _, view = await get(api, "/v1/runs/r1")
        return view if view["status"] == "done" else None

    view = await eventually(finished)
    assert (view["stop_reason"], view["outcome"]) == ("declined", "declined")
    assert view["ended"] == "Run 'r1' ended at step 4: declined (" + (
        "'issue_refund' was declined by U0BOSS: fraud risk)."
    )
    assert isinstance(view["answer"], str)
    assert view["answer"]
    [decided] = view["approvals"]
    assert decided["id"] == approval_id
    assert (decided["state"], decided["decided_by"], decided["reason"]) == (
        "declined",
        "U0BOSS",
        "fraud risk",
    )
    assert decided["decided_at"] is not None
    assert decided["args"]["order_id"] == "4471"
    assert view["pending_approvals"] == []
    assert world.payments() == []


async def test_an_edited_approval_shows_proposed_and_approved_args(make_api: MakeApi) -> None:
    api = await make_api(policies=Policies(default=Policy(allow_edit=True)))
    approval_id = await park(api, "r1")
    _, parked = await get(api, "/v1/runs/r1")
    assert parked["answer"] is None
    assert [a["state"] for a in parked["approvals"]] == ["pending"]
    proposed = parked["approvals"][0]["args"]
    edited = proposed | {"amount_cents": proposed["amount_cents"] - 1}
    await decide(api, approval_id, decision="approved", by="U0BOSS", args=edited)

    async def finished() -> dict[str, Any] | None:
        _, view = await get(api, "/v1/runs/r1")
        return view if view["status"] == "done" else None

    view = await eventually(finished)
    [approved] = view["approvals"]
    assert approved["args"] == proposed
    assert approved["approved_args"] == edited
    assert approved["decided_by"] == "U0BOSS"
    assert view["answer"]
