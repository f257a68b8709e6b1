"""A limit over real HTTP: `GET /v1/runs/{id}` and `GET /v1/approvals/{id}` say what each
call counted against ("$450 of $500 for this customer in 30 days, after this refund"), and a
refund past the limit waits under the limit's policy."""

from __future__ import annotations

from collections.abc import Awaitable
from collections.abc import Callable
from typing import Any

from support import spend_agents
from support.helpers import AUTH
from support.helpers import Api

from runtime import Policies
from runtime.spend.config import SpendConfig

POLICIES = Policies.model_validate(
    {
        "default": {"approvers": ["U0APPROVER"]},
        "tools": {
            "issue_refund": {"rules": [{"when": "true", "auto_approve": True}]},
            "refund_leads": {"approvers": ["U0LEAD"]},
        },
    }
)
SPEND = SpendConfig.model_validate({"limits": {"per_customer": spend_agents.PER_CUSTOMER}})


async def start(api: Api, order: str, cents: int) -> dict[str, Any]:
    body = {"agent": "refunds", "task": spend_agents.refund("c1", order, cents)}
    response = await api.client.post("/v1/runs", json=body, headers=AUTH)
    assert response.status == 201, await response.text()
    run_id = (await response.json())["id"]
    await api.background.drain()
    response = await api.client.get(f"/v1/runs/{run_id}", headers=AUTH)
    assert response.status == 200
    return dict(await response.json())


async def test_a_run_and_its_approval_show_the_limits_their_call_counted_against(
    make_api: Callable[..., Awaitable[Api]],
) -> None:
    api = await make_api(agents=[spend_agents.agent], policies=POLICIES, spend=SPEND)
    done = await start(api, "o1", 45000)
    waiting = await start(api, "o2", 10000)

    (first,) = done["approvals"]
    assert first["state"] == "approved"
    assert first["limits"] == [
        {
            "name": "per_customer",
            "mode": "enforce",
            "outcome": "within",
            "used": 0,
            "amount": 45000,
            "after": 45000,
            "max": 50000,
            "held": True,
            "error": None,
            "line": "$450 of $500 for this customer in 30 days, after this refund",
        }
    ]
    assert waiting["status"] == "waiting_approval"
    (pending,) = waiting["pending_approvals"]
    assert pending["policy"] == "refund_leads"
    assert pending["limits"][0]["outcome"] == "over"
    assert pending["rule"].startswith("limit per_customer: $550 of $500 for this customer")
    response = await api.client.get(f"/v1/approvals/{pending['id']}", headers=AUTH)
    shown = await response.json()
    assert shown["limits"][0]["line"].endswith("after this refund — over limit per_customer")
    assert shown["envelope_id"] is None


async def test_an_envelope_is_confirmed_and_revoked_over_http_by_the_verb_the_path_names(
    make_api: Callable[..., Awaitable[Api]],
) -> None:
    api = await make_api(agents=[spend_agents.agent], policies=POLICIES, spend=SPEND)
    body = {"tool": "issue_refund", "when": "true", "by": "U0APPROVER", "reason": "outage"}
    made = await api.client.post("/v1/envelopes", json=body | {"max_calls": 3}, headers=AUTH)
    assert made.status == 201, await made.text()
    path = f"/v1/envelopes/{(await made.json())['id']}"

    confirmed = await api.client.post(f"{path}/confirm", json={"by": "U0APPROVER"}, headers=AUTH)
    revoked = await api.client.post(f"{path}/revoke", json={"by": "U0APPROVER"}, headers=AUTH)

    assert confirmed.status >= 400, await confirmed.text()  # active already: nothing to confirm
    assert "not proposed" in await confirmed.text()
    assert revoked.status == 200, await revoked.text()
    assert (await revoked.json())["revoked_by"] == "U0APPROVER"
    assert (await revoked.json())["status"] == "revoked"
