"""Creating a run: its record and first snapshot in one write; an id names one run, so
creating it again with the same request returns it, and with another is refused."""

from __future__ import annotations

import re
import uuid

from runtime import errors
from runtime.deps import Deps
from runtime.model import identity
from store import Budget
from store import Checkpoint
from store import Message
from store import Run
from store import errors as store_errors
from store.records import ID_PATTERN


async def create(
    deps: Deps,
    agent: str,
    task: str,
    *,
    run_id: str | None = None,
    budget: Budget | None = None,
    requested_by: str | None = None,
) -> tuple[Run, bool]:
    """Create a run without driving it; (the run, False) if the id already exists."""
    chosen = deps.agent(agent)
    if not task or not task.strip():
        raise errors.InvalidRequest("a run needs a task")
    if run_id is not None and not re.fullmatch(ID_PATTERN, run_id):
        raise errors.InvalidRequest(
            f"run id {run_id[:80]!r} is not 1-128 letters, digits or _ . : -"
        )
    run_id = run_id or f"run_{uuid.uuid4().hex[:20]}"
    now = deps.clock()
    run = Run(
        id=run_id,
        agent=chosen.name,
        task=task,
        budget=budget or chosen.budget,
        requested_by=requested_by,
        lineage_id=run_id,
        model=identity(chosen.model),
        created_at=now,
        updated_at=now,
    )
    transcript = [Message(role="user", content=task)]
    if chosen.system_prompt:
        transcript.insert(0, Message(role="system", content=chosen.system_prompt))
    snapshot = Checkpoint.opening(run_id, transcript, created_at=now)
    try:
        await deps.store.create_run(run, snapshot)
    except store_errors.AlreadyExists:
        existing = await deps.run(run_id)
        # Requester and budget count when given: an id alone (a restart) names the run.
        asked = (
            chosen.name,
            task,
            requested_by or existing.requested_by,
            budget or existing.budget,
        )
        if (existing.agent, existing.task, existing.requested_by, existing.budget) != asked:
            raise errors.InvalidRequest(
                f"run {run_id!r} exists already, for agent {existing.agent!r} and task "
                f"{existing.task!r} (requested by {existing.requested_by or 'nobody'}, "
                f"budget {existing.budget.model_dump_json(exclude_none=True)}); "
                "an id names one run"
            ) from None
        return existing, False
    return await deps.run(run_id), True
