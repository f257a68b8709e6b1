"""What the queries answer with beyond single records: a run with what belongs to it, the
counts an operator watches, and one scrape's worth of metrics. Frozen: a surface renders
them, it does not change them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from store import Approval, Effect, Page, Run
from store.base import OperationalCounts
from store.records import LearnedRule


@dataclass(frozen=True)
class RunDetail:
    """One run and what a person looks at with it: its approvals (with the votes of each,
    for a quorum), its effects and its pages."""

    run: Run
    approvals: list[Approval]
    effects: list[Effect]
    votes: dict[str, list[str]]
    """Approval id -> who approved so far, for the pending ones that need several approvers."""
    pages: list[Page]


@dataclass(frozen=True)
class Counts:
    """What an operator watches, read from indexes only (cheap on every metrics scrape)."""

    runs_running: int
    runs_waiting_approval: int
    approvals_pending: int
    oldest_pending_at: datetime | None
    effects_in_doubt: int
    pages_open: int
    outbox_backlog: int
    outbox_oldest_at: datetime | None

    @classmethod
    def of(cls, counts: OperationalCounts) -> Counts:
        return cls(
            runs_running=counts.runs_running,
            runs_waiting_approval=counts.runs_waiting_approval,
            approvals_pending=counts.approvals_pending,
            oldest_pending_at=counts.oldest_pending_at,
            effects_in_doubt=counts.effects_in_doubt,
            pages_open=counts.pages_open,
            outbox_backlog=counts.outbox_backlog,
            outbox_oldest_at=counts.outbox_oldest_at,
        )


@dataclass(frozen=True)
class MetricsSnapshot:
    """The database's side of one metrics scrape."""

    counts: Counts
    learned_rules: list[LearnedRule]
    pending: list[Approval]
    """Pending approvals (oldest first, up to the scan limit), when asked for."""
