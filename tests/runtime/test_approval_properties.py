"""Property: over random interleavings of requests, decisions by allowed and disallowed users,
timeouts (some firing twice) and process crashes with recovery, a call that needs approval executes
if and only if its approval ended `approved`, and at most once (docs/architecture.md rule 4)."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from dataclasses import dataclass
from dataclasses import field
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from pathlib import Path

import pytest
from approvals_conftest_helpers import invocations
from approvals_conftest_helpers import tool_messages
from approvals_conftest_helpers import wire_agent
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from runtime import Policies
from runtime import Policy
from runtime import Runtime
from runtime import errors
from store import ApprovalState
from store import EffectStatus
from store import RunStatus
from store import Store
from store import open_store

RUN_ID = "run-prop"
WORKER = "prop-worker"
POLICIES = Policies(
    tools={
        "wire_money": Policy(
            approvers=("U0APPROVER", "U0REQ"),
            remind_every="20m",
            max_reminders=1,
            timeout="1h",
        )
    }
)
USERS = ["U0APPROVER", "U0REQ", "U0STRANGER"]

Op = tuple[str, ...] | tuple[str, str, str] | tuple[str, int]
OPS = st.lists(
    st.one_of(
        st.just(("request",)),
        st.tuples(
            st.just("decide"), st.sampled_from(USERS), st.sampled_from(["approved", "declined"])
        ),
        st.tuples(
            st.just("decide_then_crash"),
            st.sampled_from(USERS),
            st.sampled_from(["approved", "declined"]),
        ),
        st.tuples(st.just("timeout"), st.sampled_from([0, 25, 61, 180])),
        st.just(("tick_again",)),
        st.just(("crash",)),
    ),
    min_size=1,
    max_size=10,
)


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Process:
    """One incarnation of the server process: a store connection and a runtime."""

    url: str
    clock: Clock
    store: Store | None = None
    rt: Runtime | None = None
    started: bool = False
    refusals: list[str] = field(default_factory=list)

    async def boot(self) -> Runtime:
        self.store = await open_store(self.url, clock=self.clock)  # judges deadlines by it
        self.rt = Runtime(
            self.store, [wire_agent()], policies=POLICIES, worker_id=WORKER, clock=self.clock
        )
        await self.rt.recover()
        return self.rt

    async def crash(self) -> Runtime:
        assert self.store is not None
        await self.store.close()
        return await self.boot()


class ProcessDied(Exception):
    """The process died after committing a decision, before resuming the run."""


async def die(run_id: str) -> None:
    raise ProcessDied(run_id)


async def apply(proc: Process, op: Op) -> None:
    rt = proc.rt
    assert rt is not None
    kind = op[0]
    if kind == "request":
        await rt.start("wire-agent", "Pay ACME", run_id=RUN_ID, requested_by="U0REQ")
        proc.started = True
    elif kind == "decide" and proc.started:
        for approval in await rt.approvals(RUN_ID):
            try:
                await rt.decide(approval.id, op[2], by=str(op[1]))  # type: ignore[arg-type]
            except errors.DecisionRefused as exc:
                proc.refusals.append(type(exc).__name__)
    elif kind == "decide_then_crash" and proc.started:
        rt.resume_after_decision = die  # type: ignore[method-assign]
        for approval in await rt.approvals(RUN_ID):
            with contextlib.suppress(errors.DecisionRefused, ProcessDied):
                await rt.decide(approval.id, op[2], by=str(op[1]))  # type: ignore[arg-type]
        await proc.crash()
    elif kind == "timeout":
        proc.clock.now += timedelta(minutes=int(op[1]))
        await rt.desk.tick(proc.clock())
    elif kind == "tick_again":
        await rt.desk.tick(proc.clock())
    elif kind == "crash":
        await proc.crash()


async def check(proc: Process, *, final: bool) -> ApprovalState | None:
    store = proc.store
    assert store is not None
    wires = invocations("wire_money")
    assert len(wires) <= 1, f"executed more than once: {wires}"
    if not proc.started:
        assert wires == []
        return None
    approvals = await store.list_approvals(run_id=RUN_ID)
    assert len(approvals) == 1
    (approval,) = approvals
    effects = [e for e in await store.list_effects(RUN_ID) if e.tool == "wire_money"]
    if approval.state != ApprovalState.APPROVED:
        assert wires == [], f"a {approval.state.value} call executed"
        assert effects == []
    if not final:
        return approval.state
    run = await store.get_run(RUN_ID)
    if approval.state == ApprovalState.APPROVED:
        assert len(wires) == 1
        assert [e.status for e in effects] == [EffectStatus.COMPLETED]
        assert effects[0].approval_id == approval.id
        assert run.status == RunStatus.DONE
    elif approval.state == ApprovalState.DECLINED:
        state = await store.load_state(RUN_ID)
        (told,) = tool_messages(state.messages, approval.call_id or "")
        assert told["executed"] is False
        assert run.status == RunStatus.DONE
    else:
        assert run.status == RunStatus.WAITING_APPROVAL
    if approval.state == ApprovalState.APPROVED:
        assert approval.decided_by == "U0APPROVER"
    return approval.state


async def scenario(directory: Path, ops: list[Op]) -> ApprovalState | None:
    proc = Process(url=f"sqlite:///{directory / 'signoff.db'}", clock=Clock())
    await proc.boot()
    try:
        for op in ops:
            await apply(proc, op)
            await check(proc, final=False)
        await proc.crash()
        return await check(proc, final=True)
    finally:
        assert proc.store is not None
        await proc.store.close()


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(ops=OPS)
def test_call_executes_iff_approved_and_at_most_once(ops: list[Op]) -> None:
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        mp.setenv("SIGNOFF_WORLD_DB", str(Path(tmp) / "world.db"))
        asyncio.run(scenario(Path(tmp), ops))


@pytest.mark.parametrize(
    ("ops", "outcome"),
    [
        (
            [("request",), ("crash",), ("decide", "U0APPROVER", "approved"), ("crash",)],
            ApprovalState.APPROVED,
        ),
        (
            [("request",), ("decide", "U0REQ", "approved"), ("decide", "U0REQ", "declined")],
            ApprovalState.DECLINED,
        ),
        (
            [("request",), ("timeout", 61), ("tick_again",), ("decide", "U0APPROVER", "approved")],
            ApprovalState.DECLINED,
        ),
        (
            [("request",), ("decide", "U0STRANGER", "approved"), ("crash",), ("request",)],
            ApprovalState.PENDING,
        ),
        (
            [("crash",), ("request",), ("timeout", 25), ("crash",), ("timeout", 61)],
            ApprovalState.DECLINED,
        ),
        (
            [("request",), ("decide_then_crash", "U0APPROVER", "approved"), ("tick_again",)],
            ApprovalState.APPROVED,
        ),
        (
            [("request",), ("decide_then_crash", "U0REQ", "declined"), ("timeout", 180)],
            ApprovalState.DECLINED,
        ),
    ],
)
def test_known_interleavings_end_as_expected(ops: list[Op], outcome: ApprovalState) -> None:
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        mp.setenv("SIGNOFF_WORLD_DB", str(Path(tmp) / "world.db"))
        assert asyncio.run(scenario(Path(tmp), ops)) == outcome
