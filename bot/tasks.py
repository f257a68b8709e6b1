"""Work that outlives the request that started it (driving a run after a 201, a callback)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING
from typing import Any

from runtime.records import ApprovalState

if TYPE_CHECKING:
    from runtime import Runtime
    from runtime.records import Approval

log = logging.getLogger("signoff.tasks")


class Background:
    """Holds references to running tasks, logs their failures, and drains them on shutdown."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, work: Coroutine[Any, Any, Any], *, name: str) -> asyncio.Task[Any]:
        task = asyncio.create_task(work, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background task %s failed", task.get_name(), exc_info=task.exception())

    async def drain(self, grace: float = 10.0) -> None:
        """Wait for running tasks, then cancel what is left (their work is durable anyway)."""
        if not self._tasks:
            return
        _, pending = await asyncio.wait(set(self._tasks), timeout=grace)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)

    def __len__(self) -> int:
        return len(self._tasks)


def after_decision(background: Background, rt: Runtime, approval: Approval) -> None:
    """What a decision sets going (`Runtime.after_decision`: its callbacks, its run resumed),
    in the background, once the approval is decided: a vote short of its quorum waits."""
    if approval.state != ApprovalState.PENDING:
        background.spawn(rt.after_decision(approval), name=f"after decision {approval.id}")
