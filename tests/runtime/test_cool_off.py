"""Cool-off and undo (issue 42.6), on every store backend: an approved reversible call waits
out its policy's `cool_off` (durably, by the database's clock) and any of its approvers may
cancel it meanwhile, so nothing runs; once it ran, `undo_for` lets them undo it once through
its compensator. The seat provider's own log (`support.cool_off_agents`) shows what ran."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.cool_off_agents import SEATS
from support.cool_off_agents import hold_seat
from support.cool_off_agents import provider_calls
from support.cool_off_agents import release_seat
from support.cool_off_agents import seat_agent

from runtime import Agent
from runtime import Policies
from runtime import Policy
from runtime import Runtime
from runtime import ScriptedModel
from runtime import errors
from runtime import tool_call
from runtime.history import RollbackReport
from runtime.history import cool_off
from runtime.history import rollback
from store import ApprovalState
from store import EffectStatus
from store import RunStatus
from store import open_store

REQUESTER, APPROVER, OTHER = "U_REQUESTER", "U_APPROVER", "U_OTHER"


@pytest.fixture(autouse=True)
def seats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "seats.log"
    monkeypatch.setenv(SEATS, str(path))
    return path


def policies(**settings: Any) -> Policies:
    return Policies(tools={"hold_seat": Policy(approvers=(APPROVER, OTHER), **settings)})


async def approved(rt: Runtime) -> tuple[str, str]:
    """A run of the seat agent whose hold an approver approved: (run id, approval id)."""
    run_id = await rt.start("seat-agent", "Hold seat 12A", requested_by=REQUESTER)
    (approval,) = await rt.approvals(run_id)
    await rt.decide(approval.id, "approved", by=APPROVER)
    return run_id, approval.id


async def until(check: Callable[[], Any], seconds: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    ends = loop.time() + seconds
    while not await check():
        assert loop.time() < ends, "timed out"
        await asyncio.sleep(0.05)


async def test_a_cancel_in_the_cool_off_runs_nothing(make_runtime: Callable[..., Runtime]) -> None:
    rt = make_runtime([seat_agent], policies=policies(cool_off="5m"))
    run_id, approval_id = await approved(rt)

    waiting = await rt.queries.approval(approval_id)
    assert (await rt.get(run_id)).status == RunStatus.WAITING_APPROVAL
    assert waiting.state == ApprovalState.APPROVED
    assert waiting.cool_off == "waiting"
    assert waiting.cool_off_until is not None
    assert waiting.decided_at is not None
    assert 290 <= (waiting.cool_off_until - waiting.decided_at).total_seconds() <= 310
    assert provider_calls() == []
    await rt.recover()  # a parked run in its cool-off is nobody's to drive yet
    assert (await rt.get(run_id)).status == RunStatus.WAITING_APPROVAL
    assert provider_calls() == []

    cancelled = await rt.cancel_cool_off(approval_id, by=OTHER)

    assert cancelled.cool_off == "cancelled"
    assert cancelled.cool_off_by == OTHER
    run = await rt.get(run_id)
    assert run.status == RunStatus.DONE
    assert provider_calls() == []  # the provider never heard of it
    state = await rt.state_at(run_id, run.step)
    (result,) = [m for m in state.messages if m.role == "tool"]
    told = json.loads(result.content)
    assert (told["executed"], told["decision"], told["cancelled_by"]) == (False, "cancelled", OTHER)
    events = await rt.store.list_events(run_id=run_id)
    assert [(e.action, e.actor) for e in events if e.action == "cool_off_cancelled"] == [
        ("cool_off_cancelled", OTHER)
    ]
    with pytest.raises(errors.TooLate, match=r"cancelled already by U_OTHER; nothing changed"):
        await rt.cancel_cool_off(approval_id, by=APPROVER)


async def test_a_cool_off_that_ends_runs_the_call_once(
    make_runtime: Callable[..., Runtime],
) -> None:
    rt = make_runtime([seat_agent], policies=policies(cool_off="1s"))
    await rt.scheduler.start()
    try:
        run_id, approval_id = await approved(rt)
        assert provider_calls() == []

        async def done() -> bool:
            return (await rt.get(run_id)).status == RunStatus.DONE

        await until(done)  # the scheduler woke it when the cool-off ended
    finally:
        await rt.scheduler.stop()
    assert provider_calls() == ["hold 12A"]
    ran = await rt.queries.approval(approval_id)
    assert ran.cool_off == "ran"
    with pytest.raises(errors.TooLate, match="its cool-off is over and the call ran"):
        await rt.cancel_cool_off(approval_id, by=APPROVER)
    await rt.recover()
    assert provider_calls() == ["hold 12A"]


async def test_a_restart_in_the_cool_off_neither_runs_it_early_nor_loses_it(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'restart.db'}"
    first = await open_store(url)
    rt = Runtime(first, [seat_agent], policies=policies(cool_off="2s"), worker_id="w1")
    run_id, _approval_id = await approved(rt)
    await first.close()  # the worker is gone mid cool-off

    second = await open_store(url)
    try:
        fresh = Runtime(second, [seat_agent], policies=policies(cool_off="2s"), worker_id="w2")
        await fresh.recover()  # too early: nothing is run
        assert provider_calls() == []
        assert (await fresh.get(run_id)).status == RunStatus.WAITING_APPROVAL
        await asyncio.sleep(2.2)
        await asyncio.gather(fresh.recover(), fresh.recover())
        assert (await fresh.get(run_id)).status == RunStatus.DONE
        await fresh.recover()
    finally:
        await second.close()
    assert provider_calls() == ["hold 12A"]


async def test_undo_runs_the_compensator_once_for_two_clicks_at_once(
    make_runtime: Callable[..., Runtime],
) -> None:
    rt = make_runtime([seat_agent], policies=policies(undo_for="1h"))
    run_id, approval_id = await approved(rt)
    assert (await rt.get(run_id)).status == RunStatus.DONE
    assert provider_calls() == ["hold 12A"]

    outcomes = await asyncio.gather(
        rt.undo(approval_id, by=APPROVER), rt.undo(approval_id, by=OTHER), return_exceptions=True
    )

    reports = [o for o in outcomes if isinstance(o, RollbackReport)]
    refusals = [o for o in outcomes if isinstance(o, errors.TooLate)]
    assert (len(reports), len(refusals)) == (1, 1), outcomes
    (call_id,) = reports[0].compensated
    assert "undone already by" in str(refusals[0])
    assert provider_calls() == ["hold 12A", "release 12A"]
    undone = await rt.queries.approval(approval_id)
    assert undone.undone_by in (APPROVER, OTHER)
    effects = {e.call_id: e for e in await rt.store.list_effects(run_id)}
    assert effects[call_id].compensated_by == f"undo:{call_id}"
    actions = [e.action for e in await rt.store.list_events(run_id=run_id)]
    assert actions.count("undo_requested") == 1
    after = [
        a for a in actions[actions.index("undo_requested") :] if a.startswith(("undo", "comp"))
    ]
    assert after == ["undo_requested", "undo_started", "compensate"]  # as a rollback records it


async def test_undo_after_its_window_is_refused_and_changes_nothing(
    make_runtime: Callable[..., Runtime],
) -> None:
    rt = make_runtime([seat_agent], policies=policies(undo_for="1s"))
    run_id, approval_id = await approved(rt)
    await asyncio.sleep(1.2)
    events = len(await rt.store.list_events(run_id=run_id))

    with pytest.raises(errors.TooLate, match=r"the undo window closed at .* nothing changed"):
        await rt.undo(approval_id, by=APPROVER)

    assert provider_calls() == ["hold 12A"]
    assert (await rt.queries.approval(approval_id)).undone_by is None
    assert len(await rt.store.list_events(run_id=run_id)) == events


async def test_undo_of_a_call_with_no_undo_window_is_refused(
    make_runtime: Callable[..., Runtime],
) -> None:
    rt = make_runtime([seat_agent], policies=policies())
    _, approval_id = await approved(rt)
    with pytest.raises(errors.TooLate, match="nothing to undo"):
        await rt.undo(approval_id, by=APPROVER)
    assert provider_calls() == ["hold 12A"]


async def test_an_undo_that_dies_right_after_its_claim_is_finished_by_recovery(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The claim and the undo's intent commit together: a worker that dies between the claim
    and the compensation leaves an undo recovery finishes, once, not one marked done that
    never ran."""
    url = f"sqlite:///{tmp_path / 'undo.db'}"
    first = await open_store(url)
    rt = Runtime(first, [seat_agent], policies=policies(undo_for="1h"), worker_id="w1")
    run_id, approval_id = await approved(rt)

    async def dies(*args: Any, **kwargs: Any) -> RollbackReport:
        raise SystemExit("the worker died after the claim")

    compensate_all = cool_off.compensate_all
    monkeypatch.setattr(cool_off, "compensate_all", dies)
    with pytest.raises(SystemExit):
        await rt.undo(approval_id, by=APPROVER)
    await first.close()
    monkeypatch.setattr(cool_off, "compensate_all", compensate_all)
    assert provider_calls() == ["hold 12A"]

    second = await open_store(url)
    try:
        fresh = Runtime(second, [seat_agent], policies=policies(undo_for="1h"), worker_id="w2")
        assert await fresh.recover() == [run_id]
        assert await fresh.recover() == []
        assert (await fresh.queries.approval(approval_id)).undone_by == APPROVER
        actions = [e.action for e in await second.list_events(run_id=run_id)]
        assert actions.count("undo_started") == 1  # recovery finishes the intent, not a new one
    finally:
        await second.close()
    assert provider_calls() == ["hold 12A", "release 12A"]


async def test_an_undo_that_dies_after_compensating_is_marked_undone_by_recovery(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compensation ran and its result is recorded; the worker dies before the undo's
    end. Recovery finishes it: the run that ended done reads `undone` once, and the seat is
    released once (the compensation is not run again)."""
    url = f"sqlite:///{tmp_path / 'undo.db'}"
    first = await open_store(url)
    rt = Runtime(first, [seat_agent], policies=policies(undo_for="1h"), worker_id="w1")
    run_id, approval_id = await approved(rt)
    assert (await rt.get(run_id)).stop_reason == "answered"

    undo_after = rollback._undo_after

    async def dies(*args: Any, **kwargs: Any) -> RollbackReport:
        await undo_after(*args, **kwargs)
        raise SystemExit("the worker died after the compensation, before the undo's end")

    monkeypatch.setattr(rollback, "_undo_after", dies)
    with pytest.raises(SystemExit):
        await rt.undo(approval_id, by=APPROVER)
    await first.close()
    monkeypatch.setattr(rollback, "_undo_after", undo_after)
    assert provider_calls() == ["hold 12A", "release 12A"]

    second = await open_store(url)
    try:
        fresh = Runtime(second, [seat_agent], policies=policies(undo_for="1h"), worker_id="w2")
        assert (await fresh.get(run_id)).stop_reason == "answered"  # not marked before
        assert await fresh.recover() == [run_id]
        assert await fresh.recover() == []
        run = await fresh.get(run_id)
        assert (run.status, run.stop_reason) == (RunStatus.DONE, "undone")
        marks = [c.stop_reason for c in await fresh.history(run_id)]
        assert marks.count("undone") == 1
        actions = [e.action for e in await second.list_events(run_id=run_id)]
        assert actions.count("compensate") == 1
        assert actions.count("undo_started") == 1
        releases = [e for e in await second.list_effects(run_id) if e.compensates]
        assert [e.status for e in releases] == [EffectStatus.COMPLETED]
    finally:
        await second.close()
    assert provider_calls() == ["hold 12A", "release 12A"]


two_seats = Agent(
    "seat-agent",
    model=ScriptedModel(
        [tool_call("hold_seat", {"seat": "12A"}), tool_call("hold_seat", {"seat": "12B"}), "Done."]
    ),
    tools=[hold_seat, release_seat],
)


async def test_a_call_undone_while_its_run_goes_on_makes_the_run_end_undone(
    make_runtime: Callable[..., Runtime],
) -> None:
    """12A is held, then undone while the run waits on its second hold's approval: when the
    run answers "Done." it reads `undone`, not done."""
    rt = make_runtime([two_seats], policies=policies(undo_for="1h"))
    run_id, first = await approved(rt)
    assert (await rt.get(run_id)).status == RunStatus.WAITING_APPROVAL
    await rt.undo(first, by=OTHER)
    assert (await rt.get(run_id)).status == RunStatus.WAITING_APPROVAL  # not marked: going on
    (second,) = [a for a in await rt.approvals(run_id) if a.id != first]

    await rt.decide(second.id, "approved", by=APPROVER)

    run = await rt.get(run_id)
    assert (run.status, run.stop_reason) == (RunStatus.DONE, "undone")
    assert provider_calls() == ["hold 12A", "release 12A", "hold 12B"]
    marks = [c.stop_reason for c in await rt.history(run_id)]
    assert marks.count("undone") == 1
