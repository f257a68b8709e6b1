"""Decision statistics over a window of the audit trail: how long requests waited for a
person, how often people declined or edited, how many expired, and who decided most
(`signoff approvals stats`). Read from the audit events the store writes with every request
and decision, so the numbers are those an auditor would count."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass
from dataclasses import field
from datetime import datetime
from typing import Any

from store import AuditEvent
from store import Store

PAGE = 5000
_DECISIONS = ("approval_approved", "approval_declined")


@dataclass(frozen=True, slots=True)
class ApprovalStats:
    since: datetime
    requested: int = 0
    """Requests asked of people in the window (not those a rule decided at once)."""
    auto_decided: int = 0
    decided: int = 0
    approved: int = 0
    edited: int = 0
    declined: int = 0
    expired: int = 0
    waits: tuple[float, ...] = ()
    """Seconds from request to decision, of each request decided in the window."""
    approvers: dict[str, int] = field(default_factory=dict)

    def quantile(self, q: float) -> float | None:
        if not self.waits:
            return None
        if len(self.waits) == 1:
            return self.waits[0]
        return statistics.quantiles(self.waits, n=100, method="inclusive")[round(q * 100) - 1]

    def rate(self, count: int) -> float | None:
        return count / self.decided if self.decided else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "since": self.since.isoformat(),
            "requested": self.requested,
            "auto_decided": self.auto_decided,
            "decided": self.decided,
            "p50_wait_seconds": self.quantile(0.5),
            "p90_wait_seconds": self.quantile(0.9),
            "decline_rate": self.rate(self.declined),
            "edit_rate": self.rate(self.edited),
            "expiry_rate": self.rate(self.expired),
            "busiest_approvers": sorted(self.approvers.items(), key=lambda kv: (-kv[1], kv[0])),
        }


async def approval_stats(store: Store, *, since: datetime) -> ApprovalStats:
    """The window's statistics; a decision counts when its request is in the window too."""
    asked: dict[str, datetime] = {}
    counts: Counter[str] = Counter()
    approvers: Counter[str] = Counter()
    waits: list[float] = []
    async for event in _events(store, since):
        if event.action == "approval_requested" and event.approval_id:
            asked[event.approval_id] = event.at
        elif event.action in ("approval_auto_approved", "approval_denied"):
            counts["auto"] += 1
        elif event.action in _DECISIONS and event.approval_id in asked:
            requested_at = asked.pop(event.approval_id)
            waits.append((event.at - requested_at).total_seconds())
            counts[_outcome(event)] += 1
            if _outcome(event) != "expired":
                approvers[event.actor] += 1
    decided = sum(counts[k] for k in ("approved", "edited", "declined", "expired"))
    return ApprovalStats(
        since=since,
        requested=len(asked) + decided,
        auto_decided=counts["auto"],
        decided=decided,
        approved=counts["approved"] + counts["edited"],
        edited=counts["edited"],
        declined=counts["declined"],
        expired=counts["expired"],
        waits=tuple(sorted(waits)),
        approvers=dict(approvers.most_common(5)),
    )


def _outcome(event: AuditEvent) -> str:
    if event.action == "approval_declined":
        return "expired" if event.detail.get("reason") == "expired" else "declined"
    return "edited" if event.detail.get("approved_args") else "approved"


async def _events(store: Store, since: datetime) -> Any:
    after = 0
    while True:
        page = await store.list_audit(since=since, after=after, limit=PAGE)
        for event in page:
            yield event
        if len(page) < PAGE:
            return
        after = page[-1].id or after
