"""What the queries answer with beyond single records: a run with what belongs to it, the
counts an operator watches, and one scrape's worth of metrics. Frozen: a surface renders
them, it does not change them."""

from __future__ import annotations

from dataclasses import dataclass

from store import Approval
from store import Effect
from store import Page
from store import Run
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


Counts = OperationalCounts
"""What an operator watches: the store's own counts, as they are (no copy of its fields)."""


@dataclass(frozen=True)
class MetricsSnapshot:
    """The database's side of one metrics scrape."""

    counts: Counts
    learned_rules: list[LearnedRule]
    pending: list[Approval]
    """Pending approvals (oldest first, up to the scan limit), when asked for."""
