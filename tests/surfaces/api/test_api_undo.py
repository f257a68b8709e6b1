"""`POST /v1/approvals/{id}/undo` tells the truth (issue 42.6), over real HTTP: an undo whose
compensator fails answers 502 with why, the approval not undone (its `undo_error` says
why) and the undo's report naming the failure; tried again once the provider is back, it
answers 200 and the call reads undone, released once."""

from __future__ import annotations

from collections.abc import Awaitable
from collections.abc import Callable

from support.helpers import AUTH
from support.helpers import Api
from support.undo_truth_agents import PROVIDER
from support.undo_truth_agents import fresh_provider  # noqa: F401 (autouse)
from support.undo_truth_agents import holder

from runtime import Policies
from runtime import Policy

APPROVER = "U0BOB"


async def test_a_failed_undo_answers_502_with_why_and_may_be_tried_again(
    make_api: Callable[..., Awaitable[Api]],
) -> None:
    policies = Policies(tools={"hold": Policy(approvers=(APPROVER,), undo_for="1h")})
    api = await make_api(agents=[holder], policies=policies)
    run_id = await api.rt.start("holder", "Hold 9F", requested_by="U0RILEY")
    (approval,) = await api.rt.approvals(run_id)
    await api.rt.decide(approval.id, "approved", by=APPROVER)
    shown = await (await api.client.get(f"/v1/approvals/{approval.id}", headers=AUTH)).json()
    assert shown["ran_outcome"] == "completed"
    PROVIDER.release_down = True

    path = f"/v1/approvals/{approval.id}/undo"
    response = await api.client.post(path, json={"by": APPROVER}, headers=AUTH)
    body = await response.json()

    assert response.status == 502, body
    assert "is not undone" in body["error"]
    assert "the seat provider is down" in body["error"]
    assert body["undone_by"] is None
    assert "the seat provider is down" in body["undo_error"]
    assert list(body["undo"]["failed"]) == body["undo"]["paged"]

    PROVIDER.release_down = False
    response = await api.client.post(path, json={"by": APPROVER}, headers=AUTH)
    body = await response.json()
    assert response.status == 200, body
    assert (body["undone_by"], body["undo_error"]) == (APPROVER, None)
    assert [what for what, _ in PROVIDER.calls] == ["hold 9F", "release 9F"]
