"""A run that answered says whether it did what was asked (issue 40.1): done, declined,
expired, or failed with the error of the tool that raised; a failure the model got past
with a retry does not count. A tool's exception is logged once, with its traceback, and the
arguments the tool marks sensitive masked in both."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

import pytest

from runtime import Agent
from runtime import Message
from runtime import Policies
from runtime import Policy
from runtime import Runtime
from runtime import ScriptedModel
from runtime import tool
from runtime import tool_call
from runtime.model import Entry
from store import RunStatus
from store import Store


class CrmUnavailable(RuntimeError):
    """The CRM answered 503."""


def crm_agent(*, fail_times: int = 1, retry: bool = False) -> Agent:
    """Deletes a customer (approval needed) through a CRM that answers 503 `fail_times`;
    `retry`: the model asks once more after a failure."""
    failures = {"left": fail_times}

    @tool(description="Delete a customer.", effect="irreversible", sensitive=["api_key"])
    def delete_customer(customer_id: str, api_key: str) -> dict[str, str]:
        if failures["left"] > 0:
            failures["left"] -= 1
            raise CrmUnavailable(f"the CRM answered 503 for {customer_id} (key {api_key})")
        return {"deleted": customer_id}

    def policy(messages: Sequence[Message]) -> Entry:
        results = [json.loads(m.content) for m in messages if m.role == "tool"]
        if not results or (retry and "error" in results[-1] and len(results) < 2):
            return tool_call("delete_customer", {"customer_id": "7", "api_key": "k-secret-7"})
        return "I tried to delete customer 7."

    return Agent("crm", model=ScriptedModel(policy), tools=[delete_customer])


async def started(store: Store, agent: Agent, **options: Any) -> tuple[Runtime, str]:
    rt = Runtime(store, [agent], worker_id="w", **options)
    return rt, await rt.start(agent.name, "Delete customer 7", requested_by="U0REQ")


async def test_an_approved_tool_that_raised_fails_the_run_with_its_error(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    rt, run_id = await started(store, crm_agent())
    [asked] = await rt.approvals(run_id)
    with caplog.at_level(logging.WARNING, logger="signoff"):
        await rt.decide(asked.id, "approved", by="U0BOB")

    run = await rt.get(run_id)
    assert (run.status, run.stop_reason) == (RunStatus.DONE, "tool_failed")
    assert run.error == (
        "delete_customer: CrmUnavailable: the CRM answered 503 for 7 (key [sensitive])"
    )
    [raised] = [r for r in caplog.records if getattr(r, "event", None) == "tool_raised"]
    assert raised.levelno == logging.WARNING
    assert (raised.run_id, raised.step) == (run_id, 1)  # type: ignore[attr-defined]
    assert "tool delete_customer raised in run" in raised.getMessage()
    assert "Traceback (most recent call last)" in (raised.exc_text or "")
    assert 'raise CrmUnavailable(f"the CRM answered 503' in (raised.exc_text or "")
    for text in (raised.getMessage(), raised.exc_text or ""):
        assert "k-secret-7" not in text  # masked in both
        assert "[sensitive]" in text
    assert len([r for r in caplog.records if r.exc_text or r.exc_info]) == 1  # logged once


async def test_a_failure_the_model_retried_past_does_not_count(store: Store) -> None:
    rt, run_id = await started(store, crm_agent(fail_times=1, retry=True))
    for _ in range(2):  # the retry asks again: a new call, a new approval
        [pending] = await rt.approvals(run_id, state="pending")
        await rt.decide(pending.id, "approved", by="U0BOB")

    run = await rt.get(run_id)
    assert (run.status, run.stop_reason, run.error) == (RunStatus.DONE, "answered", None)


async def test_a_declined_call_is_the_run_s_outcome(store: Store) -> None:
    rt, run_id = await started(store, crm_agent())
    [asked] = await rt.approvals(run_id)
    await rt.decide(asked.id, "declined", by="U0BOB", reason="not eligible")

    run = await rt.get(run_id)
    assert (run.status, run.stop_reason, run.error) == (RunStatus.DONE, "declined", None)


async def test_an_expired_call_is_the_run_s_outcome(store: Store, clock: Any) -> None:
    policies = Policies(tools={"delete_customer": Policy(timeout="1h")})
    rt, run_id = await started(store, crm_agent(), policies=policies, clock=clock)
    clock.advance(hours=1)
    await rt.desk.tick(clock())

    run = await rt.get(run_id)
    assert (run.status, run.stop_reason, run.error) == (RunStatus.DONE, "expired", None)


async def test_a_read_that_raised_fails_the_run_too(store: Store) -> None:
    """A read's failure rides in the run's last write: it counts all the same."""

    @tool(description="Find a customer.", effect="read")
    def find_customer(customer_id: str) -> dict[str, str]:
        raise CrmUnavailable(f"the CRM answered 503 for {customer_id}")

    def policy(messages: Sequence[Message]) -> Entry:
        if not any(m.role == "tool" for m in messages):
            return tool_call("find_customer", {"customer_id": "7"})
        return "I could not find customer 7."

    agent = Agent("finder", model=ScriptedModel(policy), tools=[find_customer])
    rt, run_id = await started(store, agent)

    run = await rt.get(run_id)
    assert (run.status, run.stop_reason) == (RunStatus.DONE, "tool_failed")
    assert run.error == "find_customer: CrmUnavailable: the CRM answered 503 for 7"
