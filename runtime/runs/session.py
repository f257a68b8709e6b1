"""What the pieces of one run's driver share: the run, its agent, its journal and whether
the driver ended the run, with the two writes that end a step early (park to wait for a
person, stop the run)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from runtime.agent import Agent
from runtime.approvals import announce_pages
from runtime.deps import Deps
from runtime.runs.budget import StopReason
from runtime.runs.journal import Journal
from store import Page
from store import Run
from store import RunStatus


@dataclass(eq=False)
class Session:
    deps: Deps
    run: Run
    agent: Agent
    journal: Journal
    ended: bool = False
    """Whether this driver ended the run (done, failed): what follows is told once."""

    async def park(self) -> None:
        """Wait for a human, holding nothing; re-parking an already parked run writes nothing."""
        journal = self.journal
        if journal.status == RunStatus.WAITING_APPROVAL and not journal.pending:
            return
        await journal.write(
            status=RunStatus.WAITING_APPROVAL, stop_reason=StopReason.WAITING_APPROVAL
        )

    async def stop(
        self,
        status: RunStatus,
        reason: StopReason,
        *,
        error: str | None = None,
        pages: Sequence[Page] = (),
    ) -> None:
        """End the run with what is queued, its stop reason and the pages it leaves."""
        committed = await self.journal.write(
            status=status, stop_reason=reason, error=error, pages=pages
        )
        self.ended = True
        await announce_pages(self.deps, pages, committed, self.journal.run_now())
