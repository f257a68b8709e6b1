"""Property (issue 25): over random sequences of refund runs for a few orders and amounts,
decisions (plain, edited, as separate, declined), forks, rollbacks, retried starts and
restarts, the payment provider's ledger is exactly the approved calls: each refund the
provider made is one (key, arguments) a person approved, made once, and each completed refund
in Signoff's ledger ran with exactly the arguments its approval approved under its key."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from examples import world as outside
from examples.refund_agent import agent as refund_agent
from runtime import Runtime
from runtime import errors
from runtime.approvals.policy import Policies
from runtime.approvals.policy import Policy
from store import ApprovalState
from store import EffectStatus
from store import Store
from store import open_store
from store.digest import args_digest

ORDERS = ["4471", "7"]  # neither has a restocking fee
POLICIES = Policies(tools={"issue_refund": Policy(allow_edit=True)})
WORKER = "prop-worker"

Op = tuple[Any, ...]
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("start"), st.sampled_from(ORDERS), st.sampled_from([20, 25])),
        st.tuples(
            st.just("decide"),
            st.integers(0, 5),
            st.sampled_from(["approve", "edit", "separate", "decline"]),
            st.sampled_from([1500, 2000, 2500]),
        ),
        st.tuples(st.just("fork"), st.integers(0, 5)),
        st.tuples(st.just("rollback"), st.integers(0, 5)),
        st.tuples(st.just("retry"), st.integers(0, 5)),
        st.just(("restart",)),
    ),
    min_size=1,
    max_size=10,
)


class World:
    def __init__(self, url: str) -> None:
        self.url = url
        self.runs: list[tuple[str, str]] = []  # (run id, task)
        self.store: Store | None = None
        self.rt: Runtime | None = None

    async def boot(self) -> Runtime:
        if self.store is not None:
            await self.store.close()
        self.store = await open_store(self.url)
        self.rt = Runtime(self.store, [refund_agent], policies=POLICIES, worker_id=WORKER)
        await self.rt.recover()
        return self.rt

    def pick(self, index: int) -> tuple[str, str] | None:
        return self.runs[index % len(self.runs)] if self.runs else None


async def apply(w: World, op: Op) -> None:
    rt = w.rt
    assert rt is not None
    kind = op[0]
    if kind == "start":
        run_id, task = f"run-{len(w.runs)}", f"Refund order {op[1]} for ${op[2]}"
        w.runs.append((run_id, task))
        await rt.start("refund-agent", task, run_id=run_id, requested_by="U0REQ")
    elif kind == "restart":
        await w.boot()
    elif (picked := w.pick(op[1])) is None:
        return
    elif kind == "decide":
        await decide(rt, picked[0], op[2], op[3])
    elif kind == "fork":
        with contextlib.suppress(errors.SignoffRuntimeError):
            w.runs.append((await rt.fork(picked[0], from_step=1), picked[1]))
    elif kind == "rollback":
        with contextlib.suppress(errors.SignoffRuntimeError):
            await rt.rollback(picked[0], 1)
    elif kind == "retry":
        with contextlib.suppress(errors.SignoffRuntimeError):
            await rt.start("refund-agent", picked[1], run_id=picked[0], requested_by="U0REQ")


async def decide(rt: Runtime, run_id: str, how: str, cents: int) -> None:
    for approval in await rt.approvals(run_id, state=ApprovalState.PENDING):
        edit = {**approval.args, "amount_cents": cents} if how == "edit" else None
        decision = "declined" if how == "decline" else "approved"
        with contextlib.suppress(errors.DecisionRefused, errors.InvalidRequest):
            await rt.decide(
                approval.id, decision, by="U0BOB", args=edit, separate=how == "separate"
            )


async def check(w: World) -> None:
    store = w.store
    assert store is not None
    provider = {
        key: (ref, cents) for kind, ref, cents, key in outside.payments() if kind == "refund"
    }
    approved: dict[str, set[str]] = {}
    for run_id, _ in w.runs:
        approvals = {a.id: a for a in await store.list_approvals(run_id=run_id)}
        for effect in await store.list_effects(run_id):
            if effect.tool != "issue_refund" or effect.status != EffectStatus.COMPLETED:
                continue
            approval = approvals[str(effect.approval_id)]
            # It ran with exactly what was approved, under the key the approval names.
            assert approval.state == ApprovalState.APPROVED
            assert effect.args_digest == approval.approved_digest == args_digest(effect.args)
            assert effect.result["amount_cents"] == effect.args["amount_cents"]
            assert provider[effect.idempotency_key] == (
                effect.args["order_id"],
                effect.args["amount_cents"],
            )
            approved.setdefault(effect.idempotency_key, set()).add(effect.digest)
    # The provider's refunds are the approved (key, digest) pairs, one digest per key, once.
    assert set(provider) == set(approved)
    assert all(len(digests) == 1 for digests in approved.values()), approved


async def scenario(directory: Path, ops: list[Op]) -> None:
    w = World(f"sqlite:///{directory / 'signoff.db'}")
    await w.boot()
    try:
        for op in ops:
            await apply(w, op)
            await check(w)
        await w.boot()
        await check(w)
    finally:
        assert w.store is not None
        await w.store.close()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
def test_the_provider_makes_exactly_the_approved_calls_once(ops: list[Op]) -> None:
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        mp.setenv("SIGNOFF_WORLD_DB", str(Path(tmp) / "world.db"))
        asyncio.run(scenario(Path(tmp), ops))


def test_the_conflict_scenario_by_hand() -> None:
    """The issue's story as one fixed sequence: 25.00, then 20.00 edited, as separate."""
    ops: list[Op] = [
        ("start", "4471", 25),
        ("decide", 0, "approve", 0),
        ("start", "4471", 20),
        ("decide", 1, "approve", 0),  # refused: a conflict
        ("decide", 1, "separate", 0),
        ("fork", 1),
        ("retry", 0),
    ]
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        mp.setenv("SIGNOFF_WORLD_DB", str(Path(tmp) / "world.db"))
        asyncio.run(scenario(Path(tmp), ops))
        amounts = sorted(c for k, _, c, _ in outside.payments() if k == "refund")
    assert amounts == [2000, 2500]
