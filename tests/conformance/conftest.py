"""Factory fixtures for the conformance suite: runs, checkpoints, effects, approvals, pages.

Everything here goes through the `Store` interface only, so a new backend joins the suite by
adding one parameter to the `store` fixture in `tests/conftest.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from datetime import datetime
from itertools import count
from typing import Any

import pytest

from store import Approval
from store import Batch
from store import Checkpoint
from store import Committed
from store import Effect
from store import Message
from store import Page
from store import Reversibility
from store import Run
from store import RunStatus
from store import Store
from store import Usage

from .builders import Append
from .builders import Clock
from .builders import MakeApproval
from .builders import MakeEffect
from .builders import MakeOneOfEach
from .builders import MakePage
from .builders import MakeRun


@pytest.fixture
def ids() -> Callable[[str], str]:
    """Fresh ids: ids('run') -> 'run-1', 'run-2', ..."""
    counter = count(1)
    return lambda prefix: f"{prefix}-{next(counter)}"


@pytest.fixture
def make_run(store: Store, clock: Clock, ids: Callable[[str], str]) -> MakeRun:
    """Create a run with a snapshot at seq 0 holding the task as the first user message."""

    async def make(
        run_id: str | None = None,
        *,
        lineage_id: str | None = None,
        messages: Sequence[Message] | None = None,
        at: datetime | None = None,
        **fields: Any,
    ) -> Run:
        run_id = run_id or ids("run")
        at = at or clock()
        fields.setdefault("task", f"Refund order for {run_id}")
        run = Run(
            id=run_id,
            agent="refund-agent",
            lineage_id=lineage_id or run_id,
            created_at=at,
            updated_at=at,
            **fields,
        )
        transcript = (Message(role="user", content=run.task),) if messages is None else messages
        snapshot = Checkpoint.opening(run_id, transcript, status=run.status, created_at=at)
        await store.create_run(run, snapshot)
        return run

    return make


@pytest.fixture
def append(store: Store, clock: Clock) -> Append:
    """Commit the next checkpoint of a run (seq = latest + 1), with any other batch parts."""

    async def append(
        run_id: str,
        messages: Sequence[Message] = (),
        *,
        step: int | None = None,
        status: RunStatus = RunStatus.RUNNING,
        snapshot: bool = False,
        usage: Usage | None = None,
        **batch: Any,
    ) -> Committed:
        latest = await store.load_state(run_id)
        checkpoint = Checkpoint(
            run_id=run_id,
            seq=latest.seq + 1,
            step=latest.step if step is None else step,
            snapshot=snapshot,
            status=status,
            usage=latest.usage if usage is None else usage,
            messages=tuple(messages),
            created_at=clock(),
        )
        return await store.commit(Batch(run_id=run_id, checkpoints=[checkpoint], **batch))

    return append


@pytest.fixture
def make_effect(clock: Clock, ids: Callable[[str], str]) -> MakeEffect:
    """An effect about to start (not written): an irreversible refund unless told otherwise."""

    def make(run_id: str, **fields: Any) -> Effect:
        fields.setdefault("call_id", ids("call"))
        fields.setdefault("lineage_id", run_id)
        fields.setdefault("step", 1)
        fields.setdefault("tool", "issue_refund")
        fields.setdefault("args", {"order_id": "4471", "amount_cents": 2500})
        fields.setdefault("idempotency_key", f"key-{fields['call_id']}")
        fields.setdefault("reversibility", Reversibility.IRREVERSIBLE)
        fields.setdefault("started_at", clock())
        return Effect(run_id=run_id, **fields)

    return make


@pytest.fixture
def make_approval(clock: Clock, ids: Callable[[str], str]) -> MakeApproval:
    """A pending approval (not written)."""

    def make(run_id: str | None = None, **fields: Any) -> Approval:
        fields.setdefault("id", ids("appr"))
        fields.setdefault("tool", "issue_refund")
        fields.setdefault("args", {"order_id": "4471", "amount_cents": 2500})
        fields.setdefault("created_at", clock())
        if run_id is not None:
            fields.setdefault("lineage_id", run_id)
            fields.setdefault("call_id", ids("call"))
        return Approval(run_id=run_id, **fields)

    return make


@pytest.fixture
def make_page(clock: Clock, ids: Callable[[str], str]) -> MakePage:
    """A page about an effect nobody can undo (not written)."""

    def make(run_id: str | None = None, **fields: Any) -> Page:
        fields.setdefault("id", ids("page"))
        fields.setdefault("reason", "no compensator")
        fields.setdefault("tool", "send_email")
        fields.setdefault("detail", "the e-mail went out and cannot be unsent")
        fields.setdefault("created_at", clock())
        return Page(run_id=run_id, **fields)

    return make


@pytest.fixture
def one_of_each(
    make_effect: MakeEffect, make_approval: MakeApproval, make_page: MakePage
) -> MakeOneOfEach:
    """An effect, an approval and a page of the run with the given id (not written)."""
    return lambda run_id: (make_effect(run_id), make_approval(run_id), make_page(run_id))


@pytest.fixture
async def run(make_run: MakeRun) -> Run:
    """A fresh run."""
    return await make_run()


@pytest.fixture
async def pending(store: Store, run: Run, make_approval: MakeApproval) -> Approval:
    """A pending approval of `run`, written to the store."""
    approval = make_approval(run.id, idempotency_key="refund-4471", requested_by="U0")
    await store.create_approval(approval)
    return approval
