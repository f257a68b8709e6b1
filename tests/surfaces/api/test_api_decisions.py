"""`POST /v1/approvals/{id}/decision` over real HTTP: the same rules as Slack and the CLI
(approvers, self-approval, decided once, expiry, validated edits), an answer once the
decision is durable, and the run resumed in the background."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Coroutine
from typing import Any

import pytest
from support.helpers import AUTH
from support.helpers import Api
from support.helpers import eventually

from bot.tasks import Background
from examples import world
from runtime import Policies
from runtime import Policy
from store import RunStatus

REFUND = {"agent": "refund-agent", "task": "Refund order 4471"}
MakeApi = Callable[..., Awaitable[Api]]


class HeldBackground(Background):
    """Runs everything but what follows decisions (resumes), which waits for `release()`."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[tuple[Coroutine[Any, Any, Any], str]] = []

    def spawn(self, work: Coroutine[Any, Any, Any], *, name: str) -> asyncio.Task[Any]:
        if name.startswith("after decision "):
            self.held.append((work, name))
            return asyncio.create_task(asyncio.sleep(0))
        return super().spawn(work, name=name)

    def __bool__(self) -> bool:  # an empty Background is falsy (len 0); this one is given
        return True

    def release(self) -> None:
        held, self.held = self.held, []
        for work, name in held:
            super().spawn(work, name=name)


async def decide(api: Api, approval_id: str, **body: Any) -> tuple[int, dict[str, Any]]:
    response = await api.client.post(
        f"/v1/approvals/{approval_id}/decision", json=body, headers=AUTH
    )
    assert response.content_type == "application/json"
    return response.status, await response.json()


async def park(api: Api, run_id: str = "r1", **extra: Any) -> str:
    """Start a refund run over HTTP; return the id of the approval it waits for."""
    response = await api.client.post(
        "/v1/runs", json=REFUND | {"run_id": run_id} | extra, headers=AUTH
    )
    assert response.status == 201
    [pending] = (await api.parked(run_id))["pending_approvals"]
    return str(pending["id"])


async def status_of(api: Api, run_id: str = "r1") -> RunStatus:
    return (await api.rt.get(run_id)).status


def refunds() -> list[Any]:
    return [p for p in world.payments() if p[0] == "refund"]


async def done(api: Api, run_id: str = "r1") -> bool:
    return await status_of(api, run_id) == RunStatus.DONE


async def test_approve_answers_and_the_run_resumes_and_refunds_once(api: Api) -> None:
    approval_id = await park(api)
    status, answer = await decide(api, approval_id, decision="approved", by="U0BOSS")
    assert status == 200
    assert (answer["id"], answer["state"], answer["decided_by"]) == (
        approval_id,
        "approved",
        "U0BOSS",
    )
    assert answer["decided_at"] is not None
    await eventually(lambda: done(api))
    assert [r[1] for r in refunds()] == ["4471"]


async def test_the_answer_comes_once_the_decision_is_durable_before_the_run_resumes(
    make_api: MakeApi,
) -> None:
    background = HeldBackground()
    api = await make_api(background)
    approval_id = await park(api)
    status, answer = await decide(api, approval_id, decision="approved", by="U0BOSS")
    assert (status, answer["state"]) == (200, "approved")
    assert (await api.rt.desk.get(approval_id)).decided_by == "U0BOSS"  # durable
    assert [name for _, name in background.held] == [f"after decision {approval_id}"]
    assert await status_of(api) == RunStatus.WAITING_APPROVAL  # not resumed in the request
    assert refunds() == []
    background.release()
    await eventually(lambda: done(api))
    assert len(refunds()) == 1


async def test_decline_with_a_reason_tells_the_run_and_refunds_nothing(api: Api) -> None:
    approval_id = await park(api)
    status, answer = await decide(
        api, approval_id, decision="declined", by="U0BOSS", reason="not this one"
    )
    assert (status, answer["state"], answer["reason"]) == (200, "declined", "not this one")
    await eventually(lambda: done(api))
    assert refunds() == []
    state = await api.store.load_state("r1")
    [told] = [m for m in state.messages if m.role == "tool" and m.name == "issue_refund"]
    assert "not this one" in told.content


async def test_an_approval_asked_over_the_api_is_decided_over_it(api: Api) -> None:
    body = {"tool": "wire_money", "args": {"cents": 5}, "approval_id": "a1"}
    await api.client.post("/v1/approvals", json=body, headers=AUTH)
    status, answer = await decide(api, "a1", decision="approved", by="U0BOSS")
    assert (status, answer["state"], answer["run_id"]) == (200, "approved", None)
    response = await api.client.get("/v1/approvals/a1", headers=AUTH)
    assert (await response.json())["decided_by"] == "U0BOSS"


async def test_someone_who_is_not_an_approver_gets_403_and_changes_nothing(
    make_api: MakeApi,
) -> None:
    api = await make_api(policies=Policies(default=Policy(approvers=("U0BOSS",))))
    approval_id = await park(api)
    status, answer = await decide(api, approval_id, decision="approved", by="U0INTERN")
    assert status == 403
    assert "U0INTERN is not an approver" in answer["error"]
    assert (await api.rt.desk.get(approval_id)).state == "pending"
    assert await status_of(api) == RunStatus.WAITING_APPROVAL


async def test_the_requester_cannot_approve_their_own_run(api: Api) -> None:
    approval_id = await park(api, requested_by="U0ASKER")
    status, answer = await decide(api, approval_id, decision="approved", by="U0ASKER")
    assert status == 403
    assert "self-approval" in answer["error"]
    assert (await api.rt.desk.get(approval_id)).state == "pending"
    # declining one's own request is allowed
    status, answer = await decide(api, approval_id, decision="declined", by="U0ASKER")
    assert (status, answer["state"]) == (200, "declined")


async def test_deciding_again_gets_409_saying_who_decided_and_when(api: Api) -> None:
    approval_id = await park(api)
    await decide(api, approval_id, decision="approved", by="U0BOSS")
    for again in ("approved", "declined"):
        status, answer = await decide(api, approval_id, decision=again, by="U0OTHER")
        assert status == 409
        assert "Already approved by U0BOSS at " in answer["error"]
        assert answer["approval"]["decided_by"] == "U0BOSS"
        assert answer["approval"]["decided_at"] is not None
    await eventually(lambda: done(api))
    assert len(refunds()) == 1


async def test_deciding_after_the_deadline_gets_409_expired(make_api: MakeApi) -> None:
    api = await make_api(policies=Policies(default=Policy(timeout=0.3)))
    approval_id = await park(api)
    await asyncio.sleep(0.5)
    status, answer = await decide(api, approval_id, decision="approved", by="U0BOSS")
    assert status == 409
    assert "expired" in answer["error"]
    assert (answer["approval"]["state"], answer["approval"]["reason"]) == ("declined", "expired")
    await eventually(lambda: done(api))
    assert refunds() == []


async def test_a_quorum_fills_vote_by_vote_then_the_run_resumes(make_api: MakeApi) -> None:
    quorum = Policy(approvers=("U0ANN", "U0BOB"), required_approvals=2)
    api = await make_api(policies=Policies(default=quorum))
    approval_id = await park(api)
    status, first = await decide(api, approval_id, decision="approved", by="U0ANN")
    assert (status, first["state"], first["votes"]) == (200, "pending", ["U0ANN"])
    events = len(await api.store.list_events())
    status, again = await decide(api, approval_id, decision="approved", by="U0ANN")
    assert (status, again["state"], again["votes"]) == (200, "pending", ["U0ANN"])
    assert again["already_voted"] is True
    assert "already approved" in again["note"]
    assert len(await api.store.list_events()) == events  # no new audit event
    assert await status_of(api) == RunStatus.WAITING_APPROVAL
    status, second = await decide(api, approval_id, decision="approved", by="U0BOB")
    assert (status, second["state"], second["votes"]) == (200, "approved", ["U0ANN", "U0BOB"])
    await eventually(lambda: done(api))
    assert len(refunds()) == 1


async def test_edited_arguments_are_validated_then_executed(make_api: MakeApi) -> None:
    api = await make_api(policies=Policies(default=Policy(allow_edit=True)))
    approval_id = await park(api)
    bad = {"order_id": "4471", "amount_cents": "lots"}
    status, answer = await decide(api, approval_id, decision="approved", by="U0BOSS", args=bad)
    assert status == 400
    assert "amount_cents" in answer["error"]
    assert (await api.rt.desk.get(approval_id)).state == "pending"
    edited = {"order_id": "4471", "amount_cents": 1000}
    status, answer = await decide(api, approval_id, decision="approved", by="U0BOSS", args=edited)
    # Validated by the tool: the fee it was not given is its default.
    assert (status, answer["approved_args"]) == (200, {**edited, "restocking_fee_cents": 0})
    await eventually(lambda: done(api))
    assert [(r[1], r[2]) for r in refunds()] == [("4471", 1000)]


async def test_edits_the_policy_does_not_allow_get_400_and_change_nothing(api: Api) -> None:
    approval_id = await park(api)
    edited = {"order_id": "4471", "amount_cents": 1}
    status, answer = await decide(api, approval_id, decision="approved", by="U0BOSS", args=edited)
    assert status == 400
    assert "does not allow editing" in answer["error"]
    assert (await api.rt.desk.get(approval_id)).state == "pending"


async def test_an_unknown_approval_gets_404(api: Api) -> None:
    status, answer = await decide(api, "ap_nope", decision="approved", by="U0BOSS")
    assert status == 404
    assert "ap_nope" in answer["error"]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({}, "decision"),
        ({"by": "U0BOSS"}, "decision"),
        ({"decision": "approve", "by": "U0BOSS"}, "decision"),
        ({"decision": "yes", "by": "U0BOSS"}, "decision"),
        ({"decision": "approved"}, "by"),
        ({"decision": "approved", "by": ""}, "by"),
        ({"decision": "approved", "by": "signoff"}, "Slack user id"),
        ({"decision": "approved", "by": "S0GROUP"}, "Slack user id"),
        ({"decision": "approved", "by": 42}, "by"),
        ({"decision": "approved", "by": "U0BOSS", "args": [1]}, "args"),
        ({"decision": "approved", "by": "U0BOSS", "reason": "x" * 3_001}, "reason"),
        ({"decision": "approved", "by": "U0BOSS", "colour": "blue"}, "colour"),
        ([], "body"),
    ],
)
async def test_bad_bodies_get_400_with_the_reason_and_change_nothing(
    api: Api, body: Any, reason: str
) -> None:
    approval_id = await park(api)
    response = await api.client.post(
        f"/v1/approvals/{approval_id}/decision", json=body, headers=AUTH
    )
    assert response.status == 400
    assert reason in (await response.json())["error"]
    assert (await api.rt.desk.get(approval_id)).state == "pending"
    assert await status_of(api) == RunStatus.WAITING_APPROVAL


async def test_malformed_json_gets_400(api: Api) -> None:
    approval_id = await park(api)
    response = await api.client.post(
        f"/v1/approvals/{approval_id}/decision",
        data=b'{"decision": "approved",',
        headers=AUTH | {"Content-Type": "application/json"},
    )
    assert response.status == 400
    assert "JSON" in (await response.json())["error"]
    assert (await api.rt.desk.get(approval_id)).state == "pending"


async def test_a_decision_leaves_one_info_line(api: Api, caplog: pytest.LogCaptureFixture) -> None:
    approval_id = await park(api)
    with caplog.at_level(logging.INFO, logger="signoff"):
        await decide(api, approval_id, decision="declined", by="U0BOSS", reason="no")
        await eventually(lambda: done(api))
    lines = [r.getMessage() for r in caplog.records if r.name == "signoff.approvals"]
    assert lines == [f"approval {approval_id} (issue_refund, run r1) declined by U0BOSS: 'no'"]
