"""`POST /v1/approvals/{id}/withdraw` over real HTTP (issue 40.5): the token that asked takes
its request back when its agent stops waiting, no other token may, and a decision after it
changes nothing; a wait is its waiter's heartbeat, and once that lapses the approval says
nobody is waiting for its answer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from collections.abc import Callable
from typing import Any

import pytest
from support.api_support import ApiServers
from support.api_support import bearer
from support.api_support import token
from support.helpers import Api

from runtime import Runtime
from store import Store

AGENT, OTHER, DESK = "agent-5d1e0c7a", "other-9b3f2a64", "desk-7c0d19e2"
TOKENS = {
    "mcp-proxy": token(AGENT, "approvals:request"),
    "another-agent": token(OTHER, "approvals:request"),
    "approvals-page": token(DESK, "approvals:decide"),
}
ASK = {"tool": "delete_file", "args": {"path": "/x"}, "approval_id": "mcp_1"}


@pytest.fixture
async def api(make_runtime: Callable[..., Runtime], store: Store) -> AsyncIterator[Api]:
    servers = ApiServers(make_runtime, store, token=None, tokens=TOKENS)
    yield await servers.start()
    await servers.close()


async def call(api: Api, secret: str, method: str, path: str, body: Any = None) -> Any:
    response = await api.client.request(method, path, json=body, headers=bearer(secret))
    return response.status, await response.json()


async def test_the_token_that_asked_withdraws_and_no_other_may(api: Api) -> None:
    assert (await call(api, AGENT, "POST", "/v1/approvals", ASK))[0] == 201
    status, refused = await call(api, OTHER, "POST", "/v1/approvals/mcp_1/withdraw")
    assert status == 403
    assert refused["error"] == (
        "only the token that asked for approval mcp_1 may withdraw it; nothing changed"
    )
    status, refused = await call(api, DESK, "POST", "/v1/approvals/mcp_1/withdraw")
    assert status == 403
    assert "does not have the scope approvals:request" in refused["error"]
    assert (await call(api, AGENT, "GET", "/v1/approvals/mcp_1"))[1]["state"] == "pending"

    status, withdrawn = await call(api, AGENT, "POST", "/v1/approvals/mcp_1/withdraw")
    assert status == 200
    assert (withdrawn["state"], withdrawn["decided_by"], withdrawn["reason"]) == (
        "declined",
        "signoff",
        "withdrawn: the agent stopped waiting",
    )
    again = await call(api, AGENT, "POST", "/v1/approvals/mcp_1/withdraw")
    assert again == (200, withdrawn)  # a retry after a lost answer: the same answer

    events = await api.rt.queries.audit(approval_id="mcp_1")
    assert [(e.action, e.actor) for e in events if "withdraw" in e.action] == [
        ("api_approval_withdrawn", "token:mcp-proxy")
    ]
    assert (await call(api, AGENT, "POST", "/v1/approvals/nope/withdraw"))[0] == 404


async def test_a_decision_after_the_withdrawal_says_so_and_changes_nothing(api: Api) -> None:
    await call(api, AGENT, "POST", "/v1/approvals", ASK)
    _, withdrawn = await call(api, AGENT, "POST", "/v1/approvals/mcp_1/withdraw")
    decision = {"decision": "approved", "by": "U0BOSS"}
    status, refused = await call(api, DESK, "POST", "/v1/approvals/mcp_1/decision", decision)
    assert status == 409
    assert refused["error"].startswith("This approval was withdrawn at ")
    assert refused["error"].endswith("(the agent stopped waiting); there is nothing to decide.")
    assert (await call(api, AGENT, "GET", "/v1/approvals/mcp_1"))[1] == withdrawn | {
        "resume_state": None
    }


async def test_an_approved_request_cannot_be_withdrawn(api: Api) -> None:
    await call(api, AGENT, "POST", "/v1/approvals", ASK)
    decision = {"decision": "approved", "by": "U0BOSS"}
    assert (await call(api, DESK, "POST", "/v1/approvals/mcp_1/decision", decision))[0] == 200
    status, refused = await call(api, AGENT, "POST", "/v1/approvals/mcp_1/withdraw")
    assert status == 409
    assert refused["error"].startswith("Already approved by U0BOSS at ")
    assert refused["approval"]["state"] == "approved"
    assert (await call(api, AGENT, "GET", "/v1/approvals/mcp_1"))[1]["state"] == "approved"


async def test_a_wait_is_a_heartbeat_and_its_lapse_says_nobody_is_waiting(api: Api) -> None:
    await call(api, AGENT, "POST", "/v1/approvals", ASK)
    _, asked = await call(api, AGENT, "GET", "/v1/approvals/mcp_1")
    assert (asked["waiter_until"], asked["waiter_left_at"], asked["waiter_note"]) == (
        None,
        None,
        None,
    )
    status, waited = await call(api, AGENT, "GET", "/v1/approvals/mcp_1/wait?timeout=0.1")
    assert (status, waited["state"], waited["waiter_note"]) == (200, "pending", None)
    assert waited["waiter_until"] is not None  # 0.1 s, and a grace of 2 s

    await asyncio.sleep(2.3)  # the waiter went away without a word
    await api.rt.desk.tick(api.rt.clock())
    _, left = await call(api, AGENT, "GET", "/v1/approvals/mcp_1")
    assert (left["waiter_until"], left["waiter_note"]) == (
        None,
        "nobody is waiting for this answer now",
    )
    assert left["waiter_left_at"] is not None

    # asked again, listening on its event stream this time: a heartbeat too
    streamed = await api.client.get("/v1/approvals/mcp_1/events?timeout=0.1", headers=bearer(AGENT))
    assert streamed.status == 200
    assert "event: approval" in await streamed.text()
    _, back = await call(api, AGENT, "GET", "/v1/approvals/mcp_1")
    assert (back["waiter_left_at"], back["waiter_note"]) == (None, None)
