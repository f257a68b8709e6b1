"""Scoped API tokens over real HTTP: each token does only what its scopes say, an agent's token
cannot approve its own requests, the audit names the token, wrong and revoked tokens get 401,
and a token past its rate gets 429 with nothing created."""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import AsyncIterator
from collections.abc import Awaitable
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.api_support import PAGE_SECRET
from support.api_support import TOKENS_TOML
from support.api_support import ApiServers
from support.api_support import bearer
from support.api_support import token
from support.helpers import AUTH
from support.helpers import Api
from support.helpers import eventually

from bot.http_auth import Caller
from bot.http_auth import RateLimiter
from bot.server import api_warnings
from bot.settings import Settings
from bot.settings import load_settings
from examples import world
from runtime import Runtime
from store import RunStatus
from store import Store

AGENT, DESK, AUDITOR, OLD = "agent-7f3b9c21e8", "desk-0c44a9d17b", "audit-5e2f8b6a90", "old-9a1c"
TOKENS = {
    "refund-agent": token(AGENT, "runs:write", "runs:read", "approvals:request"),
    "approvals-page": token(DESK, "approvals:decide", "runs:read"),
    "auditor": token(AUDITOR, "audit:read"),
    "retired-agent": token(OLD, "runs:write", "runs:read", "approvals:request", revoked=True),
}
REFUND = {"agent": "refund-agent", "task": "Refund order 4471", "run_id": "r1"}
MakeApi = Callable[..., Awaitable[Api]]


@pytest.fixture
async def make_api(make_runtime: Callable[..., Runtime], store: Store) -> AsyncIterator[MakeApi]:
    """APIs with the named tokens above and no legacy token."""
    servers = ApiServers(make_runtime, store, token=None, tokens=TOKENS)
    yield servers.start
    await servers.close()


async def call(
    api: Api, secret: str, method: str, path: str, body: Any = None
) -> tuple[int, dict[str, Any]]:
    response = await api.client.request(method, path, json=body, headers=bearer(secret))
    return response.status, await response.json()


async def park(api: Api, **extra: Any) -> str:
    """The agent starts the refund run; returns the approval it waits for."""
    status, _ = await call(api, AGENT, "POST", "/v1/runs", REFUND | extra)
    assert status == 201

    async def pending() -> str | None:
        _, view = await call(api, AGENT, "GET", "/v1/runs/r1")
        waiting = view["status"] == "waiting_approval"
        return str(view["pending_approvals"][0]["id"]) if waiting else None

    return await eventually(pending)


async def audit(api: Api, query: str) -> list[dict[str, Any]]:
    status, answer = await call(api, AUDITOR, "GET", f"/v1/audit?{query}")
    assert status == 200, answer
    return list(answer["events"])


def refunds() -> list[Any]:
    return [p for p in world.payments() if p[0] == "refund"]


# what each scope lets in


async def test_a_request_only_token_cannot_decide_and_nothing_changes(api: Api) -> None:
    approval_id = await park(api)
    before = await api.store.list_events(run_id="r1")
    decision = {"decision": "approved", "by": "U0BOSS"}
    status, answer = await call(
        api, AGENT, "POST", f"/v1/approvals/{approval_id}/decision", decision
    )
    assert status == 403
    assert "'refund-agent'" in answer["error"]
    assert "approvals:decide" in answer["error"]
    approval = await api.rt.desk.get(approval_id)
    assert (approval.state, approval.decided_by) == ("pending", None)
    assert await api.store.list_votes(approval_id) == []
    assert (await api.rt.get("r1")).status == RunStatus.WAITING_APPROVAL
    assert await api.store.list_events(run_id="r1") == before
    assert refunds() == []


async def test_a_request_only_token_cannot_read_the_audit(api: Api) -> None:
    await park(api)
    for query in ("", "?run_id=r1"):
        status, answer = await call(api, AGENT, "GET", f"/v1/audit{query}")
        assert status == 403
        assert "audit:read" in answer["error"]
        assert "events" not in answer


async def test_a_decide_only_token_cannot_create_approvals_or_runs(api: Api) -> None:
    status, answer = await call(api, DESK, "POST", "/v1/approvals", {"tool": "wire_money"})
    assert status == 403
    assert "approvals:request" in answer["error"]
    status, answer = await call(api, DESK, "POST", "/v1/runs", REFUND)
    assert status == 403
    assert "runs:write" in answer["error"]
    assert await api.counts() == (0, 0)


async def test_the_audit_token_reads_the_audit_and_nothing_else(api: Api) -> None:
    await park(api)
    for method, path in (("GET", "/v1/runs/r1"), ("POST", "/v1/runs")):
        status, _ = await call(api, AUDITOR, method, path, REFUND)
        assert status == 403
    assert await api.counts() == (1, 1)


async def test_a_token_cannot_decide_as_the_requester_of_the_approval(api: Api) -> None:
    body = {"tool": "wire_money", "args": {"cents": 500_000}, "requested_by": "U0ASKER"}
    status, created = await call(api, AGENT, "POST", "/v1/approvals", body)
    assert status == 201
    path = f"/v1/approvals/{created['id']}/decision"
    status, answer = await call(api, DESK, "POST", path, {"decision": "approved", "by": "U0ASKER"})
    assert status == 403
    assert "self-approval" in answer["error"]
    assert (await api.rt.desk.get(created["id"])).state == "pending"
    status, answer = await call(api, DESK, "POST", path, {"decision": "approved", "by": "U0BOSS"})
    assert (status, answer["state"], answer["decided_by"]) == (200, "approved", "U0BOSS")


async def test_a_decision_names_the_human_and_the_audit_names_the_token(api: Api) -> None:
    approval_id = await park(api, requested_by="U0ASKER")
    status, answer = await call(
        api,
        DESK,
        "POST",
        f"/v1/approvals/{approval_id}/decision",
        {"decision": "approved", "by": "U0BOSS"},
    )
    assert (status, answer["decided_by"]) == (200, "U0BOSS")
    await eventually(lambda: _done(api))
    assert len(refunds()) == 1
    events = await audit(api, "run_id=r1")
    mine = [(e["action"], e["actor"]) for e in events if e["action"].startswith(("api_", "appr"))]
    assert mine == [
        ("api_run_started", "token:refund-agent"),
        ("approval_requested", "U0ASKER"),  # written with the approval itself
        ("approval_approved", "U0BOSS"),
        ("api_decision", "token:approvals-page"),
    ]
    [through] = [e for e in events if e["action"] == "api_decision"]
    assert through["approval_id"] == approval_id
    assert through["detail"] | {"token": "approvals-page", "by": "U0BOSS"} == through["detail"]
    assert (through["detail"]["decision"], through["detail"]["state"]) == ("approved", "approved")


async def test_an_approval_asked_over_the_api_is_audited_under_the_token(api: Api) -> None:
    body = {"tool": "wire_money", "args": {"cents": 5}, "approval_id": "a1"}
    assert (await call(api, AGENT, "POST", "/v1/approvals", body))[0] == 201
    assert (await call(api, AGENT, "POST", "/v1/approvals", body))[0] == 200  # a retry
    [requested, event] = await audit(api, "approval_id=a1")
    assert (requested["action"], requested["actor"]) == ("approval_requested", "unknown")
    assert requested["detail"]["args"] == {"cents": 5}
    assert (event["action"], event["actor"]) == ("api_approval_requested", "token:refund-agent")
    assert event["detail"] == {"token": "refund-agent", "tool": "wire_money"}


async def test_reading_an_approval_takes_any_approvals_scope_or_runs_read(api: Api) -> None:
    body = {"tool": "wire_money", "approval_id": "a1"}
    await call(api, AGENT, "POST", "/v1/approvals", body)
    for secret in (AGENT, DESK):
        status, view = await call(api, secret, "GET", "/v1/approvals/a1")
        assert (status, view["state"]) == (200, "pending")
    assert (await call(api, AUDITOR, "GET", "/v1/approvals/a1"))[0] == 403


# cancel


async def test_runs_write_cancels_a_run_audited_under_the_token(api: Api) -> None:
    approval_id = await park(api)
    status, _ = await call(api, DESK, "POST", "/v1/runs/r1/cancel", {"reason": "x"})
    assert status == 403
    status, view = await call(api, AGENT, "POST", "/v1/runs/r1/cancel", {"reason": "dup"})
    assert (status, view["status"], view["pending_approvals"]) == (200, "cancelled", [])
    assert (await api.rt.desk.get(approval_id)).state == "declined"
    [cancel] = [e for e in await audit(api, "run_id=r1") if e["action"] == "cancel"]
    assert (cancel["actor"], cancel["detail"]["reason"]) == ("token:refund-agent", "dup")
    status, answer = await call(api, AGENT, "POST", "/v1/runs/r1/cancel")  # no body
    assert status == 409
    assert "already cancelled" in answer["error"]
    assert (await call(api, AGENT, "POST", "/v1/runs/nope/cancel"))[0] == 404


# the audit endpoint


async def test_the_audit_filters_by_time_and_pages(api: Api) -> None:
    for n in range(3):
        await call(api, AGENT, "POST", "/v1/approvals", {"tool": "wire", "approval_id": f"a{n}"})
    events = await audit(api, "")
    assert [e["approval_id"] for e in events] == ["a0", "a0", "a1", "a1", "a2", "a2"]
    since = events[2]["at"].replace("+", "%2B")
    assert [e["approval_id"] for e in await audit(api, f"since={since}")] == [
        "a1",
        "a1",
        "a2",
        "a2",
    ]
    assert await audit(api, "since=2999-01-01T00:00:00") == []
    _status, answer = await call(api, AUDITOR, "GET", "/v1/audit?limit=2")
    assert (len(answer["events"]), answer["more"]) == (2, True)


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("since=yesterday", "since"),
        ("limit=0", "limit"),
        ("limit=10001", "limit"),
        ("limit=-1", "limit"),
        ("runid=r1", "runid"),
    ],
)
async def test_a_bad_audit_query_gets_400(api: Api, query: str, reason: str) -> None:
    status, answer = await call(api, AUDITOR, "GET", f"/v1/audit?{query}")
    assert status == 400
    assert reason in answer["error"]


# tokens that are not valid


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "Bearer wrong-token",
        f"Bearer {OLD}",  # revoked
        f"Bearer {hashlib.sha256(AGENT.encode()).hexdigest()}",  # the hash is not the token
        f"Bearer {AGENT}x",
        f"Bearer {AGENT[:-1]}",
        f"Basic {AGENT}",
    ],
)
async def test_wrong_and_revoked_tokens_get_401_and_change_nothing(
    api: Api, authorization: str | None
) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    for method, path, body in (
        ("POST", "/v1/runs", REFUND),
        ("POST", "/v1/approvals", {"tool": "x"}),
        ("POST", "/v1/approvals/a1/decision", {"decision": "approved", "by": "U0BOSS"}),
        ("POST", "/v1/runs/r1/cancel", {}),
        ("GET", "/v1/runs/r1", None),
        ("GET", "/v1/audit", None),
    ):
        response = await api.client.request(method, path, json=body, headers=headers)
        assert response.status == 401, (method, path)
        assert response.headers["WWW-Authenticate"] == "Bearer"
    assert await api.counts() == (0, 0)
    assert await api.store.list_events() == []


async def test_a_revoked_token_is_logged_by_name(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="signoff.api"):
        response = await api.client.get("/v1/runs/r1", headers=bearer(OLD))
    assert response.status == 401
    assert "revoked API token 'retired-agent' refused: GET /v1/runs/r1" in caplog.messages


async def test_the_legacy_token_still_has_every_scope(make_api: MakeApi) -> None:
    api = await make_api(token="e2e-secret-token")
    body = {"tool": "wire_money", "approval_id": "a1", "requested_by": "U0BOT"}
    response = await api.client.post("/v1/approvals", json=body, headers=AUTH)
    assert response.status == 201
    decision = {"decision": "approved", "by": "U0BOSS"}
    response = await api.client.post("/v1/approvals/a1/decision", json=decision, headers=AUTH)
    assert response.status == 200
    response = await api.client.get("/v1/audit?approval_id=a1", headers=AUTH)
    actors = [e["actor"] for e in (await response.json())["events"]]
    assert actors == ["U0BOT", "token:SIGNOFF_API_TOKEN", "U0BOSS", "token:SIGNOFF_API_TOKEN"]
    assert (await call(api, AGENT, "GET", "/v1/approvals/a1"))[0] == 200  # named ones too


async def test_tokens_from_settings_the_hash_or_the_environment(
    make_api: MakeApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REFUND_AGENT_TOKEN", AGENT)
    config = tmp_path / "signoff.toml"
    config.write_text(TOKENS_TOML, "utf-8")
    settings = load_settings(config)
    assert AGENT not in repr(settings)
    assert AGENT not in str(settings.model_dump())
    api = await make_api(tokens=settings.api.tokens)
    body = {"tool": "wire_money", "approval_id": "a1"}
    assert (await call(api, AGENT, "POST", "/v1/approvals", body))[0] == 201
    decision = {"decision": "declined", "by": "U0BOSS", "reason": "no"}
    status, answer = await call(api, PAGE_SECRET, "POST", "/v1/approvals/a1/decision", decision)
    assert (status, answer["state"]) == (200, "declined")
    assert (await call(api, PAGE_SECRET, "POST", "/v1/approvals", body))[0] == 403


async def test_the_token_configuration_in_the_api_docs_loads_and_serves(
    make_api: MakeApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = (Path(__file__).parents[3] / "docs" / "http-api.md").read_text("utf-8")
    [config] = [b for b in re.findall(r"^```\w*\n(.*?)^```", page, re.S | re.M) if "[api_to" in b]
    monkeypatch.setenv("REFUND_AGENT_TOKEN", AGENT)
    monkeypatch.setenv("AUDITOR_TOKEN", AUDITOR)
    path = tmp_path / "signoff.toml"
    path.write_text(config, "utf-8")
    api = await make_api(tokens=load_settings(path).api.tokens)
    body = {"tool": "wire_money", "approval_id": "a1"}
    assert (await call(api, AGENT, "POST", "/v1/approvals", body))[0] == 201
    decision = {"decision": "approved", "by": "U0BOSS"}
    desk = "approvals-page-example-token"  # the docs' hash is of this one
    assert (await call(api, desk, "POST", "/v1/approvals/a1/decision", decision))[0] == 200
    assert len(await audit(api, "approval_id=a1")) == 4  # requested (twice: store, token), decided


async def test_without_any_token_the_api_is_off(make_api: MakeApi) -> None:
    api = await make_api(tokens={})
    status, answer = await call(api, AGENT, "GET", "/v1/runs/r1")
    assert status == 503
    assert "api_tokens" in answer["error"]
    assert "SIGNOFF_API_TOKEN" in answer["error"]


# rate


async def test_past_its_rate_a_token_gets_429_with_retry_after_and_nothing_is_created(
    make_api: MakeApi,
) -> None:
    api = await make_api(rate_per_minute=3)
    for n in range(3):
        body = {"tool": "wire_money", "approval_id": f"a{n}"}
        assert (await call(api, AGENT, "POST", "/v1/approvals", body))[0] == 201
    for method, path, body in (
        ("POST", "/v1/approvals", {"tool": "wire_money", "approval_id": "a3"}),
        ("POST", "/v1/runs", REFUND),
        ("GET", "/v1/approvals/a0", None),
    ):
        response = await api.client.request(method, path, json=body, headers=bearer(AGENT))
        assert response.status == 429
        assert response.headers["Retry-After"] == "20"  # 3 a minute: one every 20 s
        assert "refund-agent" in (await response.json())["error"]
    assert await api.counts() == (0, 3)
    asked = [e["approval_id"] for e in await audit(api, "") if e["action"].startswith("api_")]
    assert asked == ["a0", "a1", "a2"]  # the auditor's own bucket


async def test_a_token_may_have_its_own_rate(make_api: MakeApi) -> None:
    tokens = {"slow": token(AGENT, "runs:read", rate_per_minute=1), "auditor": TOKENS["auditor"]}
    api = await make_api(tokens=tokens, rate_per_minute=1_000)
    assert (await call(api, AGENT, "GET", "/v1/runs/nope"))[0] == 404
    response = await api.client.get("/v1/runs/nope", headers=bearer(AGENT))
    assert (response.status, response.headers["Retry-After"]) == (429, "60")


def test_the_bucket_refills_evenly() -> None:
    now = [0.0]
    limiter = RateLimiter(60, clock=lambda: now[0])
    caller = Caller("t", b"", frozenset())
    assert [limiter.take(caller) for _ in range(60)] == [0.0] * 60
    assert limiter.take(caller) == pytest.approx(1.0)
    now[0] += 0.5
    assert limiter.take(caller) == pytest.approx(0.5)
    now[0] += 0.5
    assert limiter.take(caller) == 0.0
    now[0] += 3600
    assert [limiter.take(caller) for _ in range(60)] == [0.0] * 60  # never more than a minute's
    assert limiter.take(caller) > 0


# limits


async def test_arguments_over_the_limit_get_400_and_change_nothing(api: Api) -> None:
    big = {"note": "x" * (64 * 1024)}
    status, answer = await call(api, AGENT, "POST", "/v1/approvals", {"tool": "x", "args": big})
    assert status == 400
    assert "args" in answer["error"]
    assert "65536 bytes" in answer["error"]
    assert await api.counts() == (0, 0)


# start-up warnings


def test_serve_warns_about_the_legacy_token_and_tokens_that_request_and_decide(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("SIGNOFF_API_TOKEN", "SIGNOFF_API_TOKENS", "SIGNOFF_CALLBACK_SECRET"):
        monkeypatch.delenv(name, raising=False)
    both = token(AGENT, "approvals:request", "approvals:decide", allow_request_and_decide=True)
    warnings = api_warnings(Settings(api_token="t", api_tokens={"kiosk": both}))
    assert len(warnings) == 2
    assert "SIGNOFF_API_TOKEN grants every scope" in warnings[0]
    assert "'kiosk'" in warnings[1]
    assert "approve its own requests" in warnings[1]
    assert api_warnings(Settings(api_tokens=TOKENS, callback_secret="s")) == []
    [unsigned] = api_warnings(Settings(api_tokens=TOKENS))
    assert "no SIGNOFF_CALLBACK_SECRET" in unsigned
    assert "is off" in api_warnings(Settings())[0]


async def _done(api: Api) -> bool:
    return (await api.rt.get("r1")).status == RunStatus.DONE


@pytest.fixture
async def api(make_api: MakeApi) -> Api:
    return await make_api()
