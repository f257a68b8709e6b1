"""An agent on another stack marks arguments sensitive when it asks for an approval over the
HTTP API: every answer, the decision's and the audit trail show them masked, the stored
approval keeps them whole, and a name that is not an argument is a 400 that creates nothing."""

from __future__ import annotations

import json
from collections.abc import Awaitable
from collections.abc import Callable

from support.helpers import AUTH
from support.helpers import Api

from runtime import Policies
from runtime import Policy

from .test_api import get
from .test_api import post

IBAN = "DE89370400440532013000"
ASK = {
    "tool": "wire_money",
    "args": {"account": "ACME", "iban": IBAN},
    "approval_id": "ap-wire-1",
    "requested_by": "U0REQ",
    "sensitive": ["iban"],
}


async def test_sensitive_arguments_are_masked_in_every_answer(
    make_api: Callable[..., Awaitable[Api]],
) -> None:
    api = await make_api(policies=Policies(tools={"wire_money": Policy(allow_edit=True)}))
    status, created = await post(api, "/v1/approvals", ASK)
    assert status == 201, created
    assert created["args"] == {"account": "ACME", "iban": "[sensitive]"}
    status, again = await post(api, "/v1/approvals", ASK)  # a retry finds it
    assert (status, again["id"]) == (200, "ap-wire-1")
    decision = {
        "decision": "approved",
        "by": "U0BOB",
        "args": {"account": "ACME2", "iban": "[sensitive]"},
    }
    status, decided = await post(api, "/v1/approvals/ap-wire-1/decision", decision)
    assert status == 200, decided
    assert decided["approved_args"] == {"account": "ACME2", "iban": "[sensitive]"}
    answers = [created, again, decided, (await get(api, "/v1/approvals/ap-wire-1"))[1]]
    answers.append((await get(api, "/v1/audit?approval_id=ap-wire-1"))[1])
    assert IBAN not in json.dumps(answers)
    stored = await api.store.get_approval("ap-wire-1")
    # The edit kept the masked value as proposed: the tool would get the real one.
    assert stored.approved_args == {"account": "ACME2", "iban": IBAN}


async def test_a_sensitive_name_that_is_no_argument_is_refused(api: Api) -> None:
    before = await api.counts()
    response = await api.client.post(
        "/v1/approvals", json=ASK | {"sensitive": ["pin"]}, headers=AUTH
    )
    assert response.status == 400
    assert (await response.json())["error"] == "sensitive names no argument: pin"
    assert await api.counts() == before
