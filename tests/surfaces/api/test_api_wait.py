"""`GET /v1/approvals/{id}/wait` over real HTTP: it answers when the decision lands (at once
for one made in this process, within a re-read for one made by another), or with the
approval still pending when its timeout passes; bad input is a 400."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest
from support.helpers import AUTH
from support.helpers import Api

from runtime import Runtime


async def ask(api: Api, approval_id: str = "a1") -> None:
    body = {"tool": "wire", "args": {"n": 1}, "approval_id": approval_id}
    response = await api.client.post("/v1/approvals", json=body, headers=AUTH)
    assert response.status == 201


async def wait(api: Api, query: str = "", approval_id: str = "a1") -> tuple[int, Any, float]:
    started = time.monotonic()
    response = await api.client.get(f"/v1/approvals/{approval_id}/wait{query}", headers=AUTH)
    return response.status, await response.json(), time.monotonic() - started


async def test_a_decision_here_answers_the_waiter_at_once(api: Api) -> None:
    await ask(api)
    waiting = asyncio.create_task(wait(api, "?timeout=30"))
    await asyncio.sleep(0.3)
    assert not waiting.done()
    decided_at = time.monotonic()
    await api.rt.decide("a1", "approved", by="U0BOSS")
    status, body, _ = await waiting
    assert (status, body["state"], body["decided_by"]) == (200, "approved", "U0BOSS")
    assert time.monotonic() - decided_at < 0.5  # woken, not re-read a second later


async def test_a_decision_by_another_process_is_seen_within_a_reread(
    api: Api, make_runtime: Callable[..., Runtime]
) -> None:
    await ask(api)
    elsewhere = make_runtime(worker_id="elsewhere")  # its own notifier: wakes nobody here
    waiting = asyncio.create_task(wait(api, "?timeout=30"))
    await asyncio.sleep(0.2)
    await elsewhere.decide("a1", "declined", by="U0BOSS", reason="no")
    status, body, took = await waiting
    assert (status, body["state"], body["reason"]) == (200, "declined", "no")
    assert took < 3


async def test_the_timeout_answers_with_the_approval_still_pending(api: Api) -> None:
    await ask(api)
    status, body, took = await wait(api, "?timeout=0.5")
    assert (status, body["state"]) == (200, "pending")
    assert 0.4 < took < 3


async def test_a_decided_approval_answers_without_waiting(api: Api) -> None:
    await ask(api)
    await api.rt.decide("a1", "approved", by="U0BOSS")
    status, body, took = await wait(api, "?timeout=30")
    assert (status, body["state"]) == (200, "approved")
    assert took < 1


@pytest.mark.parametrize(
    ("query", "code", "reason"),
    [
        ("?timeout=61", 400, "timeout: '61' is not a number of seconds from 0 to 60"),
        ("?timeout=0", 400, "is not a number of seconds"),
        ("?timeout=soon", 400, "is not a number of seconds"),
        ("?colour=red", 400, "unknown query parameter(s): colour"),
    ],
)
async def test_bad_waits_are_refused(api: Api, query: str, code: int, reason: str) -> None:
    await ask(api)
    status, body, _ = await wait(api, query)
    assert status == code
    assert reason in body["error"]


async def test_waiting_on_an_unknown_approval_is_a_404(api: Api) -> None:
    status, body, _ = await wait(api, "?timeout=5", approval_id="nope")
    assert status == 404
    assert "nope" in body["error"]
