"""`POST /v1/approvals` goes through the same approval rules, over real HTTP: an agent on
another stack gets `approved` at once for a small refund, `declined` with the deny text for
a huge one, and a pending approval routed to the rule's approvers; every answer and the
audit log name the rule."""

from __future__ import annotations

from collections.abc import Awaitable
from collections.abc import Callable
from typing import Any

import pytest
from support.helpers import AUTH
from support.helpers import Api
from support.helpers import Recorder

from runtime import Policies

RULES = Policies.model_validate(
    {
        "tools": {
            "issue_refund": {
                "approvers": ["U0CLERK"],
                "rules": [
                    {"when": "args.amount_cents <= 2500", "auto_approve": True},
                    {"when": "args.amount_cents > 100000", "deny": "over $1,000: finance desk"},
                    {
                        "when": "args.amount_cents > 20000",
                        "label": "amount over $200",
                        "approvers": ["U0LEAD1", "U0LEAD2"],
                        "required_approvals": 2,
                    },
                ],
            }
        }
    }
)


async def post(api: Api, body: Any) -> tuple[int, dict[str, Any]]:
    response = await api.client.post("/v1/approvals", json=body, headers=AUTH)
    return response.status, await response.json()


async def get(api: Api, path: str) -> dict[str, Any]:
    response = await api.client.get(path, headers=AUTH)
    assert response.status == 200
    return dict(await response.json())


async def request_refund(api: Api, cents: int) -> dict[str, Any]:
    """The approval a request to refund `cents` made (201 Created)."""
    status, approval = await post(api, refund(cents))
    assert status == 201
    return approval


def refund(cents: int) -> dict[str, Any]:
    return {
        "tool": "issue_refund",
        "args": {"order_id": "4471", "amount_cents": cents},
        "requested_by": "U0BOT",
    }


@pytest.fixture
def recorder() -> Recorder:
    """What the API's notifier was asked to send."""
    return Recorder()


@pytest.fixture
async def ruled_api(make_api: Callable[..., Awaitable[Api]], recorder: Recorder) -> Api:
    """The API under the RULES policy, notifying `recorder`."""
    return await make_api(policies=RULES, notifier=recorder)


async def test_a_small_refund_is_approved_at_once_by_its_rule(
    ruled_api: Api, recorder: Recorder
) -> None:
    approval = await request_refund(ruled_api, 1000)

    assert (approval["state"], approval["decided_by"]) == ("approved", "signoff")
    assert approval["rule"] == "rule 1: args.amount_cents <= 2500 → approved at once"
    assert recorder.of("requested") == []  # nobody is asked
    events = (await get(ruled_api, f"/v1/audit?approval_id={approval['id']}"))["events"]
    decided = [e for e in events if e["action"] == "approval_auto_approved"]
    assert [(e["actor"], e["detail"]["rule"]) for e in decided] == [
        ("signoff", "rule 1: args.amount_cents <= 2500 → approved at once")
    ]


async def test_a_huge_refund_is_declined_at_once_with_the_deny_text(ruled_api: Api) -> None:
    approval = await request_refund(ruled_api, 500_000)

    assert (approval["state"], approval["reason"]) == ("declined", "over $1,000: finance desk")
    assert approval["rule"].startswith("rule 2: ")


async def test_a_large_refund_waits_for_the_rules_approvers(
    ruled_api: Api, recorder: Recorder
) -> None:
    approval = await request_refund(ruled_api, 30_000)
    shown = await get(ruled_api, f"/v1/approvals/{approval['id']}")

    assert shown["state"] == "pending"
    assert shown["required_approvals"] == 2
    assert shown["rule"] == "rule 3: amount over $200 → 2 approvals from U0LEAD1, U0LEAD2"
    assert [t.approval.id for t in recorder.of("requested") if t.approval] == [approval["id"]]
