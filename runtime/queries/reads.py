"""`Queries`: everything a surface reads, typed, in one place. Each method answers with a
record of the runtime's vocabulary (`runtime.records`) or a view (`runtime.queries.views`);
an unknown run, approval or page is the runtime's `RunNotFound`, `ApprovalNotFound` or
`PageNotFound`, any other unknown id the store's `NotFound`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING
from typing import Any

from runtime import errors
from runtime import lookups
from runtime.history import approval_state
from runtime.history import run_status
from runtime.queries.views import Counts
from runtime.queries.views import MetricsSnapshot
from runtime.queries.views import RunDetail
from store import Approval
from store import ApprovalState
from store import AuditEvent
from store import Checkpoint
from store import Effect
from store import Page
from store import Run
from store import RunState
from store import RunStatus
from store import Store
from store import errors as store_errors
from store.base import ApprovalPage
from store.records import AuditAnchor
from store.records import Envelope
from store.records import LearnedRule

if TYPE_CHECKING:  # receipts and the audit chain load when asked for: a listing signs nothing
    from runtime.approvals import Directory
    from runtime.history import ChainReport
    from runtime.signing import Signer

NOT_FOUND: tuple[type[Exception], ...] = (
    store_errors.NotFound,
    errors.RunNotFound,
    errors.ApprovalNotFound,
    errors.PageNotFound,
)
"""What a query raises for an id that names no record (never made, or pruned)."""

CHAIN_PAGE = 5_000
"""Audit events read at a time while the chain is walked."""

PENDING_SCAN = 10_000
"""Pending approvals read at most per metrics scrape."""


class Queries:
    def __init__(self, store: Store, signer: Signer | None = None) -> None:
        self._store = store
        self._signer = signer

    # runs

    async def run(self, run_id: str) -> Run:
        return await lookups.run(self._store, run_id)

    async def runs(self, status: RunStatus | str | None = None, *, limit: int = 100) -> list[Run]:
        """Runs, newest first; of one status if given (an unknown one is `InvalidRequest`)."""
        return await self._store.list_runs(run_status(status), limit=limit)

    async def run_detail(self, run_id: str) -> RunDetail:
        run = await self.run(run_id)
        approvals = await self._store.list_approvals(run_id=run_id)
        return RunDetail(
            run=run,
            approvals=approvals,
            effects=await self._store.list_effects(run_id),
            votes=await self.quorum_votes(approvals),
            pages=await self._store.list_pages(open_only=False, run_id=run_id),
        )

    async def checkpoints(self, run_id: str) -> list[Checkpoint]:
        """The run's checkpoints in order (an unknown run has none)."""
        return await self._store.history(run_id)

    async def latest_state(self, run_id: str) -> RunState:
        return await self._store.load_state(run_id)

    async def effects(self, run_id: str) -> list[Effect]:
        return await self._store.list_effects(run_id)

    async def effect(self, run_id: str, call_id: str) -> Effect:
        return await self._store.get_effect(run_id, call_id)

    # approvals

    async def approval(self, approval_id: str) -> Approval:
        return await lookups.approval(self._store, approval_id)

    async def approvals(
        self,
        *,
        run_id: str | None = None,
        state: ApprovalState | str | None = None,
        limit: int = 1000,
    ) -> list[Approval]:
        """Oldest first; in one state if given (an unknown one is `InvalidRequest`)."""
        checked = approval_state(state)
        return await self._store.list_approvals(run_id=run_id, state=checked, limit=limit)

    async def approvals_of_person(
        self, user: str, *, since: datetime, limit: int
    ) -> list[Approval]:
        """The approvals `user` asked for or decided, created since `since`, newest first, at
        most `limit` (one person's App Home, not a scan of every approval)."""
        return await self._store.approvals_of_person(user, since=since, limit=limit)

    async def pending_for(
        self,
        user: str,
        directory: Directory,
        *,
        after: tuple[datetime, str] | None = None,
        limit: int = 10,
    ) -> ApprovalPage:
        """One page of the pending approvals `user` may decide (not their own unless the
        policy allows it), longest-waiting first, selected in the store by who their
        authority names: `user`, a user group the directory says they belong to, or anyone;
        with how many wait from `after` on."""
        named = await self._store.decider_groups()
        groups = [g for g in named if user in await directory.members(g)]
        return await self._store.pending_for(user, groups=groups, after=after, limit=limit)

    async def receipt(self, approval_id: str) -> dict[str, Any] | None:
        """The signed receipt of a decided approval (signed now if its decision's process
        died before it could); None while pending, or when this process signs nothing."""
        from runtime.approvals import ensure_receipt

        approval = await self.approval(approval_id)
        return (await ensure_receipt(self._store, self._signer, approval)).receipt

    def signing_keys(self) -> dict[str, Any]:
        """The public keys receipts and anchors are signed with, as a JWKS (none: empty)."""
        return {"keys": []} if self._signer is None else self._signer.jwks()

    async def votes(self, approval_id: str) -> list[str]:
        """Who voted for an approval so far, in order."""
        return await self._store.list_votes(approval_id)

    async def quorum_votes(self, approvals: Sequence[Approval]) -> dict[str, list[str]]:
        """Who approved so far, for each pending approval here that needs several approvers."""
        return {
            a.id: await self._store.list_votes(a.id)
            for a in approvals
            if a.state == ApprovalState.PENDING and a.required_approvals > 1
        }

    # pages

    async def page(self, page_id: str) -> Page:
        return await lookups.page(self._store, page_id)

    async def pages(self, *, open_only: bool = True, run_id: str | None = None) -> list[Page]:
        """Oldest first; `open_only`: those nobody acknowledged; `run_id`: that run's only."""
        return await self._store.list_pages(open_only=open_only, run_id=run_id)

    async def open_pages_for(self, user: str | None, *, limit: int) -> list[Page]:
        """Open pages, oldest first, at most `limit`: all of them (`user` None: on-call) or
        those about the runs `user` requested."""
        return await self._store.open_pages_for(user, limit=limit)

    # learned rules

    async def learned_rule(self, rule_id: str) -> LearnedRule:
        return await self._store.get_learned_rule(rule_id)

    async def learned_rules(self) -> list[LearnedRule]:
        return await self._store.list_learned_rules()

    async def learned_rule_uses_since(
        self, rule_id: str, *, after: datetime
    ) -> list[tuple[str, str | None, datetime]]:
        """(approval id, run id, when) for each approval the rule approved after then."""
        return await self._store.learned_rule_uses_since(rule_id, after=after)

    # envelopes

    async def envelope(self, envelope_id: str) -> Envelope:
        return await self._store.get_envelope(envelope_id)

    # audit

    async def events(self, *, run_id: str | None = None) -> list[AuditEvent]:
        return await self._store.list_events(run_id=run_id)

    async def audit(
        self,
        *,
        since: datetime | None = None,
        run_id: str | None = None,
        approval_id: str | None = None,
        after: int = 0,
        limit: int = 1000,
    ) -> list[AuditEvent]:
        """Audit events in the order they were written, at or after `since`, with an id
        above `after`, of one run or approval if given, at most `limit`."""
        return await self._store.list_audit(
            since=since, run_id=run_id, approval_id=approval_id, after=after, limit=limit
        )

    async def audit_chain(self) -> ChainReport:
        """The audit trail's hash chain walked whole: the first event edited, deleted or
        moved, if any (`runtime.history.audit_chain`)."""
        from runtime.history import check_anchors
        from runtime.history import walk_chain

        events: list[AuditEvent] = []
        while page := await self._store.list_audit(
            after=events[-1].id or 0 if events else 0, limit=CHAIN_PAGE
        ):
            events.extend(page)
        anchors = await self._store.list_anchors()
        report = walk_chain(events, cuts=[a for a in anchors if a.kind == "cut"])
        check_anchors(report, events, anchors)
        return report

    async def audit_anchors(self) -> list[AuditAnchor]:
        """The audit chain's anchors, in order, with their signed documents."""
        return await self._store.list_anchors()

    # outbox

    async def outbox_waiting_before(self, item_id: int, subject_ids: Sequence[str]) -> int:
        """How many undelivered notifications about these subjects were queued before it."""
        return await self._store.outbox_waiting_before(item_id, subject_ids)

    # metrics and health

    async def counts(self) -> Counts:
        return await self._store.operational_counts()

    async def metrics(self, *, with_pending: bool) -> MetricsSnapshot:
        """The counts and learned rules, and with `with_pending` the pending approvals."""
        counts = await self.counts()
        learned = await self._store.list_learned_rules()
        pending = (
            await self._store.list_approvals(state=ApprovalState.PENDING, limit=PENDING_SCAN)
            if with_pending and counts.approvals_pending
            else []
        )
        return MetricsSnapshot(counts, learned, pending)

    async def health(self) -> dict[str, str]:
        """What keeps the database from serving now, by check (`database`, `schema`,
        `disk`), with details for the log; empty when it is ready."""
        return await self._store.health()

    async def database_now(self) -> datetime:
        """The database's clock (leases, deadlines and claims follow it)."""
        return await self._store.database_now()
