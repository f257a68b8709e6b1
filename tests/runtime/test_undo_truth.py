"""Undo tells the truth (issue 42.6), on every store backend: Undo is offered only once the
approved call's effect completed (its result durable), never while it runs, and never for
one that failed; an undo whose compensator fails leaves the call not undone (nor its run),
says why, pages on-call, and may be tried again, the compensator running again under the
same idempotency key."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta

import pytest
from support.undo_truth_agents import PROVIDER
from support.undo_truth_agents import fresh_provider  # noqa: F401 (autouse)
from support.undo_truth_agents import holder

from bot.slack import cards
from bot.slack.actions import Action
from runtime import Approval
from runtime import Policies
from runtime import Policy
from runtime import Runtime
from runtime import errors
from store import RunStatus

APPROVER = "U_APPROVER"


async def parked_hold(make_runtime: Callable[..., Runtime]) -> tuple[Runtime, str, Approval]:
    """A runtime whose `hold` may be undone for an hour, and a run of it parked on holding
    seat 9F: the runtime, the run and its approval."""
    policies = Policies(tools={"hold": Policy(approvers=(APPROVER,), undo_for="1h")})
    rt = make_runtime([holder], policies=policies)
    run_id = await rt.start("holder", "Hold 9F", requested_by="U_REQ")
    (approval,) = await rt.approvals(run_id)
    return rt, run_id, approval


def buttons(card: dict[str, object]) -> list[str]:
    blocks = card["blocks"]
    assert isinstance(blocks, list)
    return [e["action_id"] for b in blocks if b["type"] == "actions" for e in b["elements"]]


async def test_undo_is_offered_only_once_the_effect_completed(
    make_runtime: Callable[..., Runtime],
) -> None:
    rt, run_id, approval = await parked_hold(make_runtime)
    PROVIDER.holding, PROVIDER.go = asyncio.Event(), asyncio.Event()
    deciding = asyncio.create_task(rt.decide(approval.id, "approved", by=APPROVER))
    await asyncio.wait_for(PROVIDER.holding.wait(), 10)

    running = await rt.queries.approval(approval.id)  # claimed to run; the hold not done
    assert (running.cool_off, running.ran_outcome, running.undo_until) == ("ran", None, None)
    card = cards.approval_message(running, await rt.get(run_id), now=running.decided_at)
    assert Action.UNDO.value not in buttons(card)
    assert "Undo is offered once it has completed" in str(card["blocks"])
    with pytest.raises(errors.TooLate, match="still running"):
        await rt.undo(approval.id, by=APPROVER)

    PROVIDER.go.set()
    await deciding
    ran = await rt.queries.approval(approval.id)
    assert ran.ran_outcome == "completed"
    assert ran.undo_until is not None
    assert running.decided_at is not None
    assert ran.undo_until - running.decided_at >= timedelta(hours=1)
    card = cards.approval_message(ran, await rt.get(run_id), now=ran.decided_at)
    assert buttons(card) == [Action.UNDO.value]


async def test_a_call_whose_effect_failed_offers_no_undo_and_says_why(
    make_runtime: Callable[..., Runtime],
) -> None:
    rt, run_id, approval = await parked_hold(make_runtime)
    PROVIDER.hold_fails = True
    await rt.decide(approval.id, "approved", by=APPROVER)

    failed = await rt.queries.approval(approval.id)
    assert (failed.ran_outcome, failed.undo_until) == ("failed", None)
    card = cards.approval_message(failed, await rt.get(run_id), now=failed.decided_at)
    assert buttons(card) == []
    assert "Ran and failed" in str(card["blocks"])
    with pytest.raises(errors.TooLate, match="its call failed, so there is nothing to undo"):
        await rt.undo(approval.id, by=APPROVER)


async def test_a_failed_compensation_is_not_undone_pages_and_may_be_retried_once(
    make_runtime: Callable[..., Runtime],
) -> None:
    rt, run_id, approval = await parked_hold(make_runtime)
    await rt.decide(approval.id, "approved", by=APPROVER)
    assert (await rt.get(run_id)).stop_reason == "answered"
    PROVIDER.release_down = True

    report = await rt.undo(approval.id, by=APPROVER)

    (call_id,) = report.paged
    assert "the seat provider is down" in report.failed[call_id]
    failed = await rt.queries.approval(approval.id)
    assert (failed.undone_by, failed.undone_at, failed.undoing_by) == (None, None, None)
    assert failed.undo_error is not None
    assert "the seat provider is down" in failed.undo_error
    run = await rt.get(run_id)
    assert (run.status, run.stop_reason) == (RunStatus.DONE, "answered")  # not undone
    (page,) = await rt.queries.pages(run_id=run_id)
    assert page.reason == "compensation_failed"
    card = cards.approval_message(failed, run, now=failed.decided_at)
    assert "Undo failed" in str(card["blocks"])
    assert buttons(card) == [Action.UNDO.value]  # to try again

    PROVIDER.release_down = False
    again = await rt.undo(approval.id, by=APPROVER)

    assert again.compensated == [call_id]
    assert again.failed == {}
    undone = await rt.queries.approval(approval.id)
    assert (undone.undone_by, undone.undo_error) == (APPROVER, None)
    run = await rt.get(run_id)
    assert (run.status, run.stop_reason) == (RunStatus.DONE, "undone")
    releases = [key for what, key in PROVIDER.calls if what.startswith("release")]
    assert len(releases) == 1  # the failed attempt did nothing; the retry released once
    with pytest.raises(errors.TooLate, match="undone already"):
        await rt.undo(approval.id, by=APPROVER)
    keys = {e.idempotency_key for e in await rt.store.list_effects(run_id) if e.compensates}
    assert keys == {releases[0]}  # both attempts under one key: the provider dedupes them
