"""One job, long because the API has many routes: the API over real HTTP.

The HTTP API over real HTTP: runs and approvals, auth, and bad input that changes nothing."""

from __future__ import annotations

import io
import json
from collections.abc import Awaitable
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from aiohttp.test_utils import TestServer
from support.helpers import AUTH
from support.helpers import TOKEN
from support.helpers import Api
from support.helpers import Recorder

from bot.api import api_app
from bot.tasks import Background
from examples import world
from examples.refund_agent import agent as refund_agent
from runtime import Agent
from runtime import Policies
from runtime import Policy

REFUND = {"agent": "refund-agent", "task": "Refund order 4471"}


async def post(api: Api, path: str, body: Any, **headers: str) -> tuple[int, dict[str, Any]]:
    response = await api.client.post(path, json=body, headers=headers or AUTH)
    return response.status, await response.json()


async def get(api: Api, path: str) -> tuple[int, dict[str, Any]]:
    response = await api.client.get(path, headers=AUTH)
    return response.status, await response.json()


# runs


async def test_post_run_starts_it_and_it_parks_for_approval(api: Api) -> None:
    status, body = await post(api, "/v1/runs", REFUND | {"run_id": "order-4471"})
    assert status == 201
    assert body["id"] == "order-4471"
    assert body["agent"] == "refund-agent"
    view = await api.parked("order-4471")
    [pending] = view["pending_approvals"]
    assert pending["tool"] == "issue_refund"
    assert pending["state"] == "pending"
    assert pending["args"]["order_id"] == "4471"
    assert world.payments() == []


async def test_post_run_twice_with_one_id_returns_200_and_no_duplicate(api: Api) -> None:
    await post(api, "/v1/runs", REFUND | {"run_id": "order-4471"})
    await api.parked("order-4471")
    history = await api.rt.history("order-4471")
    status, body = await post(api, "/v1/runs", REFUND | {"run_id": "order-4471"})
    assert status == 200
    assert body["id"] == "order-4471"
    assert body["status"] == "waiting_approval"
    assert await api.counts() == (1, 1)
    assert await api.rt.history("order-4471") == history
    assert world.payments() == []
    assert world.emails() == []


async def test_post_run_without_id_makes_a_new_one_each_time(api: Api) -> None:
    _, first = await post(api, "/v1/runs", REFUND)
    _, second = await post(api, "/v1/runs", REFUND)
    assert first["id"] != second["id"]
    await api.parked(first["id"])
    await api.parked(second["id"])
    assert (await api.counts())[0] == 2


async def test_get_run_shows_status_usage_and_pending_approvals(api: Api) -> None:
    await post(api, "/v1/runs", REFUND | {"run_id": "r1"})
    await api.parked("r1")
    status, view = await get(api, "/v1/runs/r1")
    assert status == 200
    assert view["status"] == "waiting_approval"
    assert view["usage"]["steps"] == 2
    assert view["usage"]["cost"] > 0
    assert view["budget"]["max_steps"] == 12
    assert [a["tool"] for a in view["pending_approvals"]] == ["issue_refund"]
    assert "lease_owner" not in view


async def test_get_run_describes_its_pending_approval_with_votes_so_far(
    make_api: Callable[..., Awaitable[Api]],
) -> None:
    quorum = Policy(approvers=("U0ANN", "U0BOB"), required_approvals=2, timeout="2h")
    api = await make_api(policies=Policies(default=quorum))
    await post(api, "/v1/runs", REFUND | {"run_id": "r1"})
    view = await api.parked("r1")
    [pending] = view["pending_approvals"]
    assert pending["votes"] == []
    await api.rt.decide(pending["id"], "approved", by="U0ANN")
    status, view = await get(api, "/v1/runs/r1")
    assert status == 200
    [pending] = view["pending_approvals"]
    assert pending["tool"] == "issue_refund"
    assert pending["args"] == {"order_id": "4471", "amount_cents": 4136, "restocking_fee_cents": 0}
    assert (pending["required_approvals"], pending["votes"]) == (2, ["U0ANN"])
    assert pending["state"] == "pending"
    assert pending["deadline"] is not None
    assert pending["policy"] == "default"


async def test_get_run_after_approval_shows_it_done_with_no_pending(api: Api) -> None:
    await post(api, "/v1/runs", REFUND | {"run_id": "r1"})
    view = await api.parked("r1")
    await api.rt.decide(view["pending_approvals"][0]["id"], "approved", by="U0APPROVER")
    _, view = await get(api, "/v1/runs/r1")
    assert view["status"] == "done"
    assert view["pending_approvals"] == []
    assert [p[1] for p in world.payments() if p[0] == "refund"] == ["4471"]


async def test_run_with_budget_from_the_request_keeps_it(api: Api) -> None:
    body = REFUND | {"run_id": "r1", "budget": {"max_steps": 5, "max_cost": 1.5}}
    status, view = await post(api, "/v1/runs", body)
    assert status == 201
    assert view["budget"]["max_steps"] == 5
    assert view["budget"]["max_cost"] == 1.5


# approvals


async def test_post_approval_returns_201_pending(api: Api) -> None:
    body = {"tool": "wire_money", "args": {"to": "ACME", "cents": 100}, "requested_by": "U0BOT"}
    status, approval = await post(api, "/v1/approvals", body)
    assert status == 201
    assert approval["id"].startswith("ap_")
    assert approval["state"] == "pending"
    assert approval["args"] == {"to": "ACME", "cents": 100}
    assert approval["run_id"] is None
    assert (await api.counts()) == (0, 1)


async def test_post_approval_with_an_id_twice_asks_the_humans_once(
    make_api: Callable[..., Awaitable[Api]],
) -> None:
    recorder = Recorder()
    api = await make_api(notifier=recorder)
    body = {"tool": "wire_money", "args": {"cents": 100}, "approval_id": "invoice-77"}
    first_status, first = await post(api, "/v1/approvals", body)
    again_status, again = await post(api, "/v1/approvals", body)  # a client retrying
    assert (first_status, again_status) == (201, 200)
    assert first["id"] == again["id"] == "invoice-77"
    assert again["state"] == "pending"
    assert await api.counts() == (0, 1)
    assert [t.approval.id for t in recorder.of("requested") if t.approval] == ["invoice-77"]


async def test_post_approval_reusing_an_id_for_another_request_gets_400(api: Api) -> None:
    await post(
        api, "/v1/approvals", {"tool": "wire_money", "args": {"cents": 1}, "approval_id": "a1"}
    )
    others = (
        {"tool": "wire_money", "args": {"cents": 2}},
        {"tool": "wire_money", "args": {"cents": True}},  # JSON true is not 1
        {"tool": "delete_db", "args": {}},
        # a public address literal: the default callback policy takes it without DNS
        {"tool": "wire_money", "args": {"cents": 1}, "callback_url": "https://93.184.215.14/h"},
        {"tool": "wire_money", "args": {"cents": 1}, "requested_by": "U0SOMEONE"},
    )
    for other in others:
        status, answer = await post(api, "/v1/approvals", other | {"approval_id": "a1"})
        assert status == 400
        assert "a1" in answer["error"]
    _, kept = await get(api, "/v1/approvals/a1")
    assert (kept["tool"], kept["args"]) == ("wire_money", {"cents": 1})
    assert await api.counts() == (0, 1)


async def test_a_decided_approval_is_returned_as_decided_to_a_retry(api: Api) -> None:
    body = {"tool": "wire_money", "args": {"cents": 5}, "approval_id": "a2"}
    await post(api, "/v1/approvals", body)
    await api.rt.decide("a2", "declined", by="U0BOSS", reason="no")
    status, again = await post(api, "/v1/approvals", body)
    assert status == 200
    assert (again["state"], again["decided_by"]) == ("declined", "U0BOSS")


async def test_get_approval_shows_the_tri_state_before_and_after_a_decision(api: Api) -> None:
    _, created = await post(api, "/v1/approvals", {"tool": "wire_money", "args": {"cents": 1}})
    status, before = await get(api, f"/v1/approvals/{created['id']}")
    assert status == 200
    assert before["state"] == "pending"
    assert before["decided_by"] is None
    await api.rt.decide(created["id"], "declined", by="U0BOSS", reason="too much")
    _, after = await get(api, f"/v1/approvals/{created['id']}")
    assert after["state"] == "declined"
    assert after["decided_by"] == "U0BOSS"
    assert after["reason"] == "too much"
    assert after["decided_at"] is not None


async def test_get_approval_shows_approved(api: Api) -> None:
    _, created = await post(api, "/v1/approvals", {"tool": "wire_money", "args": {}})
    await api.rt.decide(created["id"], "approved", by="U0BOSS")
    _, after = await get(api, f"/v1/approvals/{created['id']}")
    assert after["state"] == "approved"


# auth


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "",
        "Bearer",
        "Bearer wrong-token",
        "Basic e2e-secret-token",
        "Bearere2e-secret-token",
        "e2e-secret-token",
        f"Bearer {TOKEN}x",
    ],
)
async def test_requests_without_a_valid_token_get_401_and_change_nothing(
    api: Api, authorization: str | None
) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    decision = {"decision": "approved", "by": "U0BOSS"}
    for path, body in (
        ("/v1/runs", REFUND | {"run_id": "r1"}),
        ("/v1/approvals", {"tool": "x"}),
        ("/v1/approvals/ap_1/decision", decision),
    ):
        response = await api.client.post(path, json=body, headers=headers)
        assert response.status == 401
        assert "token" in (await response.json())["error"]
        assert response.headers["WWW-Authenticate"] == "Bearer"
    for path in ("/v1/runs/r1", "/v1/approvals/ap_1"):
        response = await api.client.get(path, headers=headers)
        assert response.status == 401
    assert await api.counts() == (0, 0)


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "BeArEr", "Bearer"])
async def test_the_bearer_scheme_is_case_insensitive(api: Api, scheme: str) -> None:
    headers = {"Authorization": f"{scheme} {TOKEN}"}
    body = {"tool": "wire_money", "args": {"cents": 1}, "approval_id": "a1"}
    response = await api.client.post("/v1/approvals", json=body, headers=headers)
    assert response.status == 201, await response.text()
    response = await api.client.get("/v1/approvals/a1", headers=headers)
    assert (response.status, (await response.json())["id"]) == (200, "a1")


async def test_without_a_token_the_api_says_it_is_off(make_runtime: Callable[..., Any]) -> None:
    app = api_app(make_runtime(), token=None, background=Background())
    async with TestClient(TestServer(app)) as client:
        for method, path in (("GET", "/v1/runs/r1"), ("POST", "/v1/runs")):
            response = await client.request(method, path, headers=AUTH, json=REFUND)
            assert response.status == 503
            answer = await response.json()
            assert "SIGNOFF_API_TOKEN" in answer["error"]
            assert "off" in answer["error"]
        assert (await client.get("/healthz")).status == 200


async def test_401_does_not_reveal_whether_a_run_exists(api: Api) -> None:
    await post(api, "/v1/runs", REFUND | {"run_id": "r1"})
    await api.parked("r1")
    response = await api.client.get("/v1/runs/r1", headers={"Authorization": "Bearer nope"})
    assert response.status == 401
    assert "r1" not in await response.text()


# bad input


async def post_raw(api: Api, path: str, data: bytes, content_type: str) -> tuple[int, Any]:
    headers = AUTH | {"Content-Type": content_type}
    response = await api.client.post(path, data=data, headers=headers)
    return response.status, await response.json(content_type=None)


@pytest.mark.parametrize(
    "data",
    [b"{", b"", b"not json", b'{"agent": "refund-agent", "task": "x",}', b"\xff\xfe{}"],
)
async def test_malformed_json_gets_400_and_changes_nothing(api: Api, data: bytes) -> None:
    for path in ("/v1/runs", "/v1/approvals"):
        status, body = await post_raw(api, path, data, "application/json")
        assert status == 400
        assert "JSON" in body["error"]
    assert await api.counts() == (0, 0)


BAD_RUNS = [
    ([], "body"),
    (None, "body"),
    ("refund", "body"),
    ({"task": "Refund order 1"}, "agent"),
    ({"agent": "refund-agent"}, "task"),
    ({"agent": "refund-agent", "task": ""}, "task"),
    ({"agent": "refund-agent", "task": "   "}, "task"),
    ({"agent": "refund-agent", "task": "x" * 20_001}, "task"),
    (REFUND | {"colour": "blue"}, "colour"),
    (REFUND | {"run_id": "../../etc/passwd"}, "run_id"),
    (REFUND | {"run_id": "has space"}, "run_id"),
    (REFUND | {"run_id": ""}, "run_id"),
    (REFUND | {"run_id": "x" * 129}, "run_id"),
    (REFUND | {"run_id": 42}, "run_id"),
    (REFUND | {"budget": {"max_steps": -1}}, "budget"),
    (REFUND | {"budget": {"max_stepz": 3}}, "budget"),
    ({"agent": ["refund-agent"], "task": "x"}, "agent"),
]
BAD_APPROVALS = [
    ({"args": {}}, "tool"),
    ({"tool": ""}, "tool"),
    ({"tool": "x", "args": [1, 2]}, "args"),
    ({"tool": "x", "callback_url": "not a url"}, "callback_url"),
    ({"tool": "x", "callback_url": "ftp://example.com/hook"}, "callback_url"),
    ({"tool": "x", "extra": 1}, "extra"),
    ({"tool": "x", "requested_by": "U" * 65}, "requested_by"),
    ({"tool": "x", "approval_id": "has space"}, "approval_id"),
    ({"tool": "x", "approval_id": ""}, "approval_id"),
]


@pytest.mark.parametrize(
    ("path", "body", "reason"),
    [("/v1/runs", *case) for case in BAD_RUNS]
    + [("/v1/approvals", *case) for case in BAD_APPROVALS],
)
async def test_bad_requests_get_400_with_a_reason_and_change_nothing(
    api: Api, path: str, body: Any, reason: str
) -> None:
    status, answer = await post(api, path, body)
    assert status == 400
    assert reason in answer["error"]
    assert await api.counts() == (0, 0)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b'{"tool": "x", "args": {"a": NaN}}', "NaN"),
        (b'{"tool": "x", "args": {"a": -Infinity}}', "Infinity"),
        (b'{"tool": "x", "args": {"a": 1e999}}', "too large"),
        (b'{"tool": "x", "args": ' + b'{"a": ' * 50_000 + b"1" + b"}" * 50_001, "nested"),
    ],
)
async def test_json_that_is_not_json_gets_400_and_changes_nothing(
    api: Api, raw: bytes, reason: str
) -> None:
    response = await api.client.post(
        "/v1/approvals", data=raw, headers=AUTH | {"Content-Type": "application/json"}
    )
    assert response.status == 400, await response.text()
    assert reason in (await response.json())["error"]
    assert await api.counts() == (0, 0)


async def test_unknown_agent_gets_400_naming_the_known_ones(api: Api) -> None:
    status, answer = await post(api, "/v1/runs", {"agent": "nobody", "task": "x"})
    assert status == 400
    assert "nobody" in answer["error"]
    assert "refund-agent" in answer["error"]
    assert await api.counts() == (0, 0)


async def test_existing_run_id_with_another_agent_gets_400(
    make_api: Callable[..., Awaitable[Api]],
) -> None:
    other = Agent("other-agent", model=refund_agent.model, tools=refund_agent.tools.values())
    api = await make_api(agents=[refund_agent, other])
    await post(api, "/v1/runs", REFUND | {"run_id": "r1"})
    await api.parked("r1")
    body = {"agent": "other-agent", "task": "x", "run_id": "r1"}
    status, answer = await post(api, "/v1/runs", body)
    assert status == 400
    assert "r1" in answer["error"]
    assert await api.counts() == (1, 1)


async def test_existing_run_id_with_another_requester_or_budget_gets_400(api: Api) -> None:
    first = REFUND | {"run_id": "r1", "requested_by": "U0A", "budget": {"max_steps": 12}}
    await post(api, "/v1/runs", first)
    await api.parked("r1")
    for change in ({"requested_by": "U0B"}, {"budget": {"max_steps": 3}}):
        status, answer = await post(api, "/v1/runs", first | change)
        assert status == 400
        assert "r1" in answer["error"]
    status, again = await post(api, "/v1/runs", first)  # the same request: the same run
    assert status == 200
    assert again["budget"]["max_steps"] == 12
    assert await api.counts() == (1, 1)


async def test_a_tool_with_a_policy_of_its_own_cannot_be_asked_under_another(
    make_api: Callable[..., Awaitable[Api]],
) -> None:
    strict = Policy(approvers=("U0A", "U0B"), required_approvals=2)
    api = await make_api(policies=Policies(tools={"wire_money": strict}))
    body = {"tool": "wire_money", "args": {"cents": 1}}

    status, answer = await post(api, "/v1/approvals", body | {"policy": "default"})
    assert status == 400
    assert "policy of its own" in answer["error"]
    assert await api.counts() == (0, 0)
    status, created = await post(api, "/v1/approvals", body | {"policy": "wire_money"})
    assert (status, created["policy"], created["required_approvals"]) == (201, "wire_money", 2)


async def test_unknown_policy_name_gets_400_and_changes_nothing(api: Api) -> None:
    status, answer = await post(api, "/v1/approvals", {"tool": "wire_money", "policy": "typo"})
    assert status == 400
    assert "typo" in answer["error"]
    assert await api.counts() == (0, 0)


@pytest.mark.parametrize("path", ["/v1/runs", "/v1/approvals", "/v1/approvals/a1/decision"])
async def test_a_body_over_the_limit_gets_413_as_json_and_changes_nothing(
    api: Api, path: str
) -> None:
    await post(api, "/v1/approvals", {"tool": "wire_money", "approval_id": "a1"})
    big = json.dumps({"tool": "wire_money", "args": {"note": "x" * 1024**2}}).encode()
    headers = AUTH | {"Content-Type": "application/json"}
    response = await api.client.post(path, data=io.BytesIO(big), headers=headers)
    assert response.status == 413
    assert response.content_type == "application/json"
    assert "limit" in (await response.json())["error"]
    assert await api.counts() == (0, 1)
    assert (await api.rt.desk.get("a1")).state == "pending"


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/v1/nothing-here", 404),
        ("POST", "/v1/runs/r1", 405),
        ("GET", "/v1/approvals/a1/decision", 405),
        ("DELETE", "/v1/approvals/a1", 405),
    ],
)
async def test_unknown_endpoints_and_methods_get_json_errors(
    api: Api, method: str, path: str, status: int
) -> None:
    response = await api.client.request(method, path, headers=AUTH)
    assert response.status == status
    assert response.content_type == "application/json"
    assert path in (await response.json())["error"]


async def test_charset_the_server_cannot_decode_gets_400(api: Api) -> None:
    response = await api.client.post(
        "/v1/runs",
        data=b"{}",
        headers=AUTH | {"Content-Type": "application/json; charset=klingon"},
    )
    assert response.status == 400, await response.text()
    assert await api.counts() == (0, 0)


# unknown ids


@pytest.mark.parametrize(
    "path", ["/v1/runs/nope", "/v1/approvals/ap_nope", "/v1/runs/x%20y", "/v1/approvals/x%00y"]
)
async def test_unknown_ids_get_404(api: Api, path: str) -> None:
    response = await api.client.get(path, headers=AUTH)
    assert response.status == 404
    assert "error" in await response.json()


async def test_404_names_the_missing_id(api: Api) -> None:
    status, answer = await get(api, "/v1/runs/run-that-never-was")
    assert status == 404
    assert "run-that-never-was" in answer["error"]


# a worker that stepped aside for a newer schema


async def test_a_worker_that_stepped_aside_refuses_writes_and_serves_reads(api: Api) -> None:
    started = await api.client.post("/v1/runs", json=REFUND, headers=AUTH)
    run_id = (await started.json())["id"]
    api.rt.aside.seen(found=21, supported=20)

    refused = await api.client.post("/v1/runs", json=REFUND | {"run_id": "r2"}, headers=AUTH)
    read = await api.client.get(f"/v1/runs/{run_id}", headers=AUTH)

    assert refused.status == 503
    assert refused.headers["Retry-After"] == "30"
    assert await refused.json() == {
        "error": "This worker runs an older Signoff (schema 20) than the database (schema 21) "
        "and takes no new writes: send the request to another worker.",
        "kind": "SchemaTooNew",
    }
    assert read.status == 200
    assert (await api.counts())[0] == 1  # nothing written for the refused request
