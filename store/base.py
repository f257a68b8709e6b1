"""One job, long because each call says what it guarantees: the Store protocol.

The one interface the runtime calls. Every backend implements `Store`.

Writes that must land together go through `commit(Batch)`: one transaction holding a
checkpoint, the effects it starts or finishes, the approvals it requests, pages and audit
events. The narrower methods are conveniences over the same transaction rules.

Each method says what it guarantees."""

from __future__ import annotations

from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import KW_ONLY
from dataclasses import dataclass
from dataclasses import field
from datetime import datetime
from typing import Any
from typing import Protocol
from typing import runtime_checkable

from store import errors
from store.migration import LeaseHolder
from store.records import Approval
from store.records import ApprovalState
from store.records import AuditAnchor
from store.records import AuditEvent
from store.records import Authority
from store.records import Away
from store.records import Budget
from store.records import Checkpoint
from store.records import Effect
from store.records import EffectOutcome
from store.records import EffectReuse
from store.records import EffectStatus
from store.records import Envelope
from store.records import Fact
from store.records import LearnedRule
from store.records import LimitState
from store.records import OutboxItem
from store.records import Page
from store.records import Passkey
from store.records import Run
from store.records import RunState
from store.records import RunStatus
from store.records import Worker
from store.spend import SpendChange
from store.spend import SpendPlan

DEFAULT_PROTECTED_FACTS = frozenset({"is_admin", "price"})

UNDO_STARTED = "undo_started"
"""The audit action a rollback (or saga) records before it undoes anything."""
UNDO_ENDED = ("rollback", "compensate")
"""The audit actions that say a rollback (or a saga) finished."""


def refuse_protected(keys: Sequence[str], protected: frozenset[str]) -> None:
    """Raise ProtectedFact, writing nothing, if any of these fact keys is protected."""
    refused = sorted(set(keys) & protected)
    if refused:
        raise errors.ProtectedFact(
            f"fact key(s) {', '.join(refused)} are protected and cannot be written",
            keys=refused,
        )


def check_new_run(run: Run, snapshot: Checkpoint, events: Sequence[AuditEvent]) -> None:
    """A run starts with a snapshot of its own at seq 0; its first events are its own."""
    if snapshot.run_id != run.id or snapshot.seq != 0 or not snapshot.snapshot:
        raise errors.InvalidRecord(
            f"a run starts with a snapshot checkpoint of its own at seq 0 (run {run.id!r})"
        )
    if any(event.run_id != run.id for event in events):
        raise errors.InvalidRecord(f"the events of a new run are its own (run {run.id!r})")


@dataclass(frozen=True, slots=True)
class Batch:
    """One atomic write for one run.

    - `owner`: when set, the write is refused with `LeaseLost` unless this worker holds the lease;
      `epoch`, when set too, unless it holds it in that epoch (fencing: a worker that was slow,
      not dead, cannot write over the one that took the run over, even under the same id).
    - `checkpoints`: appended in order; the first seq must be exactly one past the latest
      (compare-and-set on history) and each next one past it.
    - `finish`: effects that ended; refused with `Conflict` unless `started` or `in_doubt`.
      A read's result that a checkpoint of the batch holds as its tool message is stored
      once, there, and read back from it (`store.read_results`).
    - `start`: effects about to execute. An effect whose idempotency key already `completed`
      in the lineage is not started; the earlier effect is returned in `Committed.preempted`.
      A completed effect that was since compensated no longer counts: doing it again is a new
      action, started under the key's next generation (`key#2`, ...), returned in
      `Committed.keys`. An effect that is not idempotent is not started while the same key
      is running or in doubt anywhere in the lineage: `Committed.blocked` names that effect.
    - `request`: approvals to create. One whose call already completed in the lineage is not
      created (`Committed.preempted`); nor is one whose key was already declined in the
      lineage (`Committed.prior_decisions`).
    - `pages`: created unless a page with the same id exists (`Committed.new_pages` lists the
      new ones). `settle_pages` acknowledges the open pages about a call.
    - `admit`: by approval id, the plan (`store.spend.SpendPlan`) of a requested approval
      whose call counts against limits or may be approved by an envelope: under the lock of
      each limit's key, its window is read and the plan decides which approval is created
      (`Committed.admitted`) and what it holds.
    - `spend`: what the effects that ended do to the holds of their calls (settled, given
      back), and what a finished run's calls that never ran give back (`store.spend`).
    - `ended_calls`: the approvals (under `cool_off` or `undo_for`) whose call's effect ends
      in this batch: a completed one opens its undo window (`store.undo_ends`).
    - `undo_ended`: a person's undo of an approved call ends in this batch, undone or failed.

    Every record in the batch must belong to `run_id`.
    """

    run_id: str
    owner: str | None = None
    checkpoints: Sequence[Checkpoint] = ()
    epoch: int | None = None
    finish: Sequence[EffectOutcome] = ()
    start: Sequence[Effect] = ()
    request: Sequence[Approval] = ()
    pages: Sequence[Page] = ()
    settle_pages: Sequence[PageSettlement] = ()
    events: Sequence[AuditEvent] = ()
    admit: Mapping[str, SpendPlan] = field(default_factory=dict)
    spend: Sequence[SpendChange] = ()
    ended_calls: Sequence[CallEnded] = ()
    undo_ended: UndoEnded | None = None


@dataclass(frozen=True, slots=True)
class CallEnded:
    """The effect of a call an approval let run (under `cool_off` or `undo_for`) ended."""

    approval_id: str
    status: EffectStatus


@dataclass(frozen=True, slots=True)
class UndoEnded:
    """A person's undo of the call an approval let run ended: undone (`error` None), or
    failed, and why (its claim is released, so a person may try again)."""

    approval_id: str
    error: str | None = None


@dataclass(frozen=True, slots=True)
class PageSettlement:
    """Acknowledge every open page about one call."""

    call_id: str
    by: str
    at: datetime


@dataclass(frozen=True, slots=True)
class Committed:
    preempted: dict[str, Effect] = field(default_factory=dict)
    prior_decisions: dict[str, Approval] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)
    blocked: dict[str, Effect] = field(default_factory=dict)
    conflicts: dict[str, Effect] = field(default_factory=dict)
    """Calls not started: their key was used by an effect with other arguments."""
    new_pages: list[str] = field(default_factory=list)
    admitted: dict[str, Approval] = field(default_factory=dict)
    """By call id, the approval created for a call a spend plan decided (`Batch.admit`)."""


@dataclass(frozen=True, slots=True)
class Ruling:
    """What was decided on an approval, as the store records it (`Store.cast_vote`,
    `Store.decide_approval`): approved or declined, by whom, when and why.

    - `approved_args`: the arguments as an approver edited them; `approved_digest`: the
      digest of what was approved (the edit, else the arguments shown), None for a decline.
    - `key_suffix`: set when approved as a separate effect (the call is re-keyed).
    - `spend_amounts`: by limit name, the amounts of an edited call (`store.spend.decided`).
    - `question`: an approver's question back to the agent, recorded with a decline.
    - `decided_for`: the person a delegate decides for (their vote, and the record says so).
    """

    state: ApprovalState
    _: KW_ONLY
    by: str
    at: datetime
    reason: str | None = None
    approved_args: dict[str, Any] | None = None
    approved_digest: str | None = None
    key_suffix: str | None = None
    spend_amounts: Mapping[str, int] | None = None
    question: str | None = None
    decided_for: str | None = None

    def __post_init__(self) -> None:
        if self.state == ApprovalState.PENDING:
            raise ValueError("a decision is approved or declined, never pending")


@dataclass(frozen=True, slots=True)
class Voted:
    """What a person's decision did: the approval after it (still pending while a quorum
    forms) and the votes counted toward its quorum (0 when it needs none)."""

    approval: Approval
    votes: int


ANYONE = "*"
"""The decider `approval_deciders` names for a policy that names no approvers."""


@dataclass(frozen=True, slots=True)
class ApprovalPage:
    """One page of approvals and how many there are from its start on (this page's too)."""

    approvals: list[Approval]
    waiting: int


@dataclass(frozen=True, slots=True)
class Claim:
    """A run the run queue handed this worker: its lease's new epoch, and the worker whose
    lease on it had lapsed (None for a run nobody held: new, decided, given back)."""

    run_id: str
    epoch: int
    lapsed_owner: str | None = None


class Claims(list[Claim]):
    """What one claim took; `more`: it took as many ready runs as its limit allowed (some
    perhaps with nothing to drive, which left the queue unclaimed), so more may wait. When
    not, the queue held no other ready run at that moment: a worker with room left need not
    ask again until it is woken."""

    def __init__(self, claims: Iterable[Claim] = (), *, more: bool = False) -> None:
        super().__init__(claims)
        self.more = more


@dataclass(frozen=True, slots=True)
class OperationalCounts:
    """What an operator watches, read from indexes only (cheap on every metrics scrape)."""

    runs_running: int
    runs_waiting_approval: int
    approvals_pending: int
    oldest_pending_at: datetime | None
    effects_in_doubt: int
    pages_open: int
    outbox_backlog: int
    outbox_oldest_at: datetime | None


@runtime_checkable
class Store(Protocol):
    url: str
    protected_facts: frozenset[str]

    known_schema: int
    """The newest schema version this Signoff knows: its claims take nothing from a newer one
    (`errors.SchemaTooNew`), and its leases say it."""

    async def close(self) -> None: ...
    async def migrate(self, *, stop_the_world: bool = False) -> tuple[int, int]:
        """Apply pending migrations: (version before, version after). `UnsafeMigration`,
        changing nothing, while workers they would leave behind hold leases (each that
        cannot step aside, each older than an unsafe one), unless `stop_the_world` takes
        those leases in the same transaction."""
        ...

    async def schema_version(self) -> int: ...
    async def lease_holders(self) -> list[LeaseHolder]:
        """The workers holding live leases, each with the schema it said it runs (None: one
        that cannot step aside), and how many runs."""
        ...

    async def sibling(self) -> Store | None:
        """Another store on the same database, with a connection of its own, opened on the
        event loop that awaits this (not this store's): for a thread that must write while
        this store's loop is blocked (a lease kept while a tool blocks the loop). None for a
        database nothing else can open (in memory). The caller closes it."""
        ...

    # runs
    async def create_run(
        self, run: Run, snapshot: Checkpoint, *, events: Sequence[AuditEvent] = ()
    ) -> None:
        """Create a run, its first checkpoint (a snapshot at seq 0) and `events` about it, in
        one transaction: AlreadyExists, writing nothing, if the id is taken."""
        ...

    async def get_run(self, run_id: str) -> Run: ...
    async def list_runs(
        self, status: RunStatus | None = None, *, limit: int = 100
    ) -> list[Run]: ...
    async def page_runs(
        self,
        *,
        status: RunStatus | None = None,
        agent: str | None = None,
        requested_by: str | None = None,
        after: tuple[datetime, str] | None = None,
        limit: int = 100,
    ) -> list[Run]:
        """Runs newest first, each filter optional, those after `after` (the (created_at,
        id) of the previous page's last one), at most `limit`."""
        ...

    async def set_run_budget(self, run_id: str, budget: Budget, *, at: datetime) -> None: ...
    async def set_run_model(self, run_id: str, model: dict[str, Any], *, at: datetime) -> None:
        """Record the model a run goes on with (a person chose another one, audited)."""
        ...

    async def prune_runs(self, finished_before: datetime) -> int: ...
    async def prune(self, finished_before: datetime, *, include_audit: bool) -> tuple[int, int]:
        """Prune finished lineages as `prune_runs` does, in one transaction; with
        `include_audit`, also the audit events written before then about runs no longer
        stored. Returns (runs, audit events) removed."""
        ...

    async def health(self) -> dict[str, str]:
        """What keeps the store from serving now, by check (`database` unreachable, `schema`
        not current, `disk` full) with details for the log; empty when it is ready."""
        ...

    async def operational_counts(self) -> OperationalCounts: ...

    # history
    async def commit(self, batch: Batch) -> Committed: ...
    async def load_state(
        self, run_id: str, *, seq: int | None = None, step: int | None = None
    ) -> RunState:
        """The latest state, the state at a seq, or the state at the end of a step of the
        run's current timeline (NotFound for a step a later rollback went back before)."""
        ...

    async def history(self, run_id: str) -> list[Checkpoint]:
        """Every checkpoint, oldest first; those a later rollback went back before are kept,
        with `rolled_back` set."""
        ...

    # effects
    async def get_effect(self, run_id: str, call_id: str) -> Effect: ...
    async def list_effects(self, run_id: str) -> list[Effect]: ...
    async def find_effect(self, lineage_id: str, idempotency_key: str) -> Effect | None:
        """The completed mutating effect with this key in the lineage (reads never repeat)."""
        ...

    async def conflicting_effect(self, idempotency_key: str, args_digest: str) -> Effect | None:
        """The latest mutating effect in any lineage under this key with another digest that
        may have happened (completed and not undone, running, in doubt): what a call with
        these arguments under this key conflicts with."""
        ...

    async def effect_group(self, run_id: str, call_id: str) -> list[EffectReuse]:
        """The reuses of this effect and, when it is itself a reuse, of the effect it reuses:
        every run that shares what it did (`EffectReuse`), oldest first."""
        ...

    async def mark_reuses_undone(self, marks: Sequence[tuple[EffectReuse, AuditEvent]]) -> int:
        """The effect each reuse relies on was compensated: mark each once, in one
        transaction, with its audit event (on the run relying on it) and a note for that run's
        thread (outbox `run_noted`). How many were marked now, not before."""
        ...

    # approvals
    async def create_approval(self, approval: Approval) -> None: ...
    async def get_approval(self, approval_id: str) -> Approval: ...
    async def duplicate_approval(
        self, idempotency_key: str, *, lineage_id: str | None, since: datetime
    ) -> Approval | None:
        """The latest approval with this idempotency key in another lineage that is pending
        or was approved at or after `since`: what a new request may duplicate."""
        ...

    async def list_approvals(
        self,
        *,
        run_id: str | None = None,
        state: ApprovalState | None = None,
        limit: int = 1000,
    ) -> list[Approval]: ...
    async def approvals_of_person(
        self, user: str, *, since: datetime, limit: int
    ) -> list[Approval]:
        """The approvals `user` asked for or decided, created at or after `since`, newest
        first, at most `limit`."""
        ...

    async def page_approvals(
        self,
        *,
        state: ApprovalState | None = None,
        run_id: str | None = None,
        tool: str | None = None,
        requested_by: str | None = None,
        after: tuple[datetime, str] | None = None,
        limit: int = 100,
    ) -> list[Approval]:
        """Approvals oldest first, each filter optional, those after `after` (the
        (created_at, id) of the previous page's last one), at most `limit`."""
        ...

    async def decider_groups(self) -> list[str]:
        """The user groups that may decide some pending approval (`approval_deciders`)."""
        ...

    async def pending_for(
        self,
        user: str,
        *,
        groups: Sequence[str] = (),
        after: tuple[datetime, str] | None = None,
        limit: int = 10,
    ) -> ApprovalPage:
        """One page of the pending approvals `user` may decide (as a person, as a member of
        `groups`, or as anyone), longest-waiting first, after `after` (the previous page's
        last (created_at, id)), at most `limit`, with how many wait from `after` on."""
        ...

    async def cast_vote(
        self,
        approval_id: str,
        ruling: Ruling,
        *,
        open_only: bool = False,
        event: AuditEvent | None = None,
        link_nonce: str | None = None,
    ) -> Voted:
        """A person's decision, in one transaction (`link_nonce`: the e-mailed link it comes
        through, recorded as used in the same transaction, `LinkUsed` if it was already).
        On an approval that needs a quorum, an approval is a vote: recorded once per person
        (`AlreadyVoted`, with `votes`, for a second one), audited as a `vote` event, and
        deciding the approval (with `event`) once the quorum is reached. A decline, or an
        approval that needs one approver, decides at once, as `decide_approval` does.
        `AlreadyDecided` if it is no longer pending, `Expired` past its deadline with
        `open_only`, and then nothing is written."""
        ...

    async def list_votes(self, approval_id: str) -> list[str]:
        """The users who voted for an approval, in order."""
        ...

    async def set_receipt(self, approval_id: str, receipt: dict[str, Any]) -> Approval:
        """Store a decided approval's signed receipt unless it has one (compare-and-set);
        the approval as it is now, with whichever receipt stayed. NotFound if none."""
        ...

    async def decide_approval(
        self,
        approval_id: str,
        ruling: Ruling,
        *,
        due_only: bool = False,
        open_only: bool = False,
        event: AuditEvent | None = None,
    ) -> Approval:
        """Decide an approval by compare-and-set, with its audit `event`. `due_only`: a
        timeout, refused (`Conflict`) before the deadline; `open_only`: a person's decision,
        refused (`Expired`) after it. Both judged by the database's clock."""
        ...

    async def approvals_without_authority(self, *, limit: int = 500) -> list[Approval]:
        """Pending approvals asked before approvals carried their authority, oldest first."""
        ...

    async def fill_authority(
        self, approval_id: str, authority: Authority, *, event: AuditEvent
    ) -> bool:
        """Record an approval's authority (with `event`) where it has none yet; False, and
        nothing written, where it has one (another process filled it first)."""
        ...

    async def due_approvals(self, *, limit: int = 500) -> list[Approval]:
        """Pending approvals whose deadline or next reminder has come by the database's
        clock. (An approval's deadline and first reminder are set by it too: `created_at`
        plus the lengths its creator chose, counted from the database's time.)"""
        ...

    async def next_due_at(self) -> datetime | None: ...
    async def record_reminder(
        self,
        approval_id: str,
        *,
        reminders_sent: int,
        next_reminder_at: datetime | None,
        escalated: bool,
    ) -> bool: ...
    async def extend_deadline(
        self, approval_id: str, *, deadline: datetime | None, expected: datetime | None
    ) -> bool: ...
    async def record_waiter(self, approval_id: str, *, seconds: float) -> bool | None:
        """Someone waits for a pending approval's answer `seconds` more by the database's
        clock (a heartbeat; it never moves the wait back). None if it is not pending, or is
        a run's (its run waits): nothing written; True if nobody's wait was live before."""
        ...

    async def waiter_left(self, approval_id: str) -> bool:
        """Compare-and-set: the pending approval's waiter's heartbeat lapsed (by the
        database's clock), so nobody waits for it now; False if it did not (or changed)."""
        ...

    async def advance_cool_off(
        self,
        approval_id: str,
        *,
        cool_off: float | None,
        undo: float | None,
        event: AuditEvent,
    ) -> Approval:
        """An approved call about to run (issue 42.6): its cool-off of `cool_off` seconds
        begins if none has (audited with `event`), and the call is claimed to run once no
        cool-off is left by the store's clock, its undo window of `undo` seconds beginning.
        The approval after: `cool_off` says whether to run, wait or drop the call."""
        ...

    async def cancel_cool_off(self, approval_id: str, *, by: str, event: AuditEvent) -> bool:
        """Compare-and-set: `by` cancels the approved call in its cool-off (audited); False
        if it is in none (it ran, or was cancelled before)."""
        ...

    async def claim_undo(self, approval_id: str, *, by: str, events: Sequence[AuditEvent]) -> bool:
        """Compare-and-set: `by` undoes the call the approval let run, once, within its undo
        window by the store's clock; the events (the request and the undo's intent) commit
        with the claim, so recovery finishes an undo that died right after it. False
        otherwise, and nothing written."""
        ...

    async def cool_offs_ended(self, *, limit: int = 100) -> list[str]:
        """The runs parked on a cool-off that ended by the store's clock."""
        ...

    async def next_cool_off_end(self) -> datetime | None:
        """When the next cool-off still running ends."""
        ...

    async def set_approval_message(
        self, approval_id: str, *, channel: str | None, ts: str | None, delivery: str
    ) -> None: ...

    async def adopt_message(self, kind: str, subject_id: str, *, channel: str, ts: str) -> bool:
        """Record where an approval's (`kind` "approval") or a page's ("page") message is,
        only if none is recorded yet; whether it was."""
        ...

    async def set_callback_status(self, approval_id: str, status: str) -> None: ...
    async def undelivered_callbacks(self) -> list[Approval]: ...

    # facts
    async def put_fact(self, fact: Fact) -> None: ...
    async def get_fact(self, key: str) -> Fact: ...
    async def list_facts(self) -> list[Fact]: ...
    async def forget_source(self, source: str) -> int: ...
    async def load_facts(self, facts: Sequence[Fact]) -> int: ...

    # pages
    async def get_page(self, page_id: str) -> Page: ...
    async def list_pages(self, *, open_only: bool = True, run_id: str | None = None) -> list[Page]:
        """Oldest first; `open_only`: those nobody acknowledged; `run_id`: that run's only."""
        ...

    async def open_pages_for(self, user: str | None, *, limit: int) -> list[Page]:
        """Open pages, oldest first, at most `limit`: all (`user` None) or those about the
        runs `user` requested."""
        ...

    async def acknowledge_page(self, page_id: str, *, by: str, at: datetime) -> Page: ...
    async def add_page_evidence(self, run_id: str, call_id: str, evidence: str) -> int:
        """Append `evidence` to the open pages about a call; how many there were. Evidence is
        for a person to settle the page with: it changes no effect."""
        ...

    async def set_page_message(
        self, page_id: str, *, channel: str | None, ts: str | None, delivery: str
    ) -> None: ...

    # outbox (rows are written by the database itself, with the change they announce)
    async def claim_outbox(
        self, owner: str, *, now: datetime, until: datetime, limit: int = 50, email: bool = False
    ) -> list[OutboxItem]:
        """Claim due rows until `until`, oldest first, never one whose subject has an
        earlier row unsent; the e-mail rows (`email_*`) with `email`, else the others. Each
        claim counts in `attempts`: above 1, an earlier sender may have delivered the row
        before it could mark it sent. `SchemaTooNew`, claiming none, once the database's
        schema is newer than `known_schema`."""
        ...

    async def finish_outbox(
        self, item_id: int, owner: str, *, at: datetime, error: str | None = None
    ) -> bool: ...

    # approvers beyond Slack
    async def email_link_used(self, nonce: str) -> datetime | None:
        """When an e-mailed link was used; None if never."""
        ...

    async def set_away(self, person: str, *, until: datetime, delegate: str, at: datetime) -> None:
        """`person` is away until `until`; `delegate` decides for them meanwhile."""
        ...

    async def clear_away(self, person: str) -> bool:
        """`person` is back; whether they had said they were away."""
        ...

    async def list_away(self, *, now: datetime) -> list[Away]:
        """Who is away at `now`, by person."""
        ...

    async def retry_outbox(self, item_id: int, owner: str, *, after: float, error: str) -> bool:
        """Release a claimed row for another attempt `after` seconds from now by the
        database's clock."""
        ...

    async def remind_open_pages(self, *, now: datetime, before: datetime) -> int:
        """Queue `page_reminded` for posted, unacknowledged pages not announced since
        `before`; how many."""
        ...

    async def queue_home_refresh(self, subjects: Sequence[str]) -> int:
        """Queue `home_stale` for each subject (one person's App Home) that has no unsent row
        waiting to be claimed: a burst of changes leaves at most one row waiting per person
        (besides one being sent). How many were queued."""
        ...

    async def release_outbox_claims(self, owner: str) -> int:
        """Unclaim `owner`'s unsent rows (it restarted); how many."""
        ...

    async def outbox_waiting_before(self, item_id: int, subject_ids: Sequence[str]) -> int:
        """How many unsent rows about these subjects are older than row `item_id`."""
        ...

    async def outbox_backlog(self) -> tuple[int, datetime | None]:
        """How many rows wait to be sent, and when the oldest was written."""
        ...

    # requests from outside, handled once

    async def note_inbound(self, key: str, *, keep_for: float) -> bool:
        """Note the request `key` (a sender's id for it) as handled for `keep_for` seconds:
        True when this is its first delivery within that time, to any process on this
        database; False when another delivery noted it first."""
        ...

    async def forget_inbound(self, *, limit: int = 1000) -> int:
        """Drop up to `limit` notes past their time; how many."""
        ...

    # audit
    async def record_event(self, event: AuditEvent) -> None: ...
    async def add_anchor(self, kind: str, *, at: datetime | None = None) -> AuditAnchor | None:
        """Anchor the audit chain's head now (`kind`: daily, manual); the anchor, or None for
        an empty trail. Anchoring an unmoved head again changes nothing."""
        ...

    async def list_anchors(self) -> list[AuditAnchor]: ...
    async def claim_sink(self, name: str, owner: str, *, ttl: float) -> int | None:
        """Take or renew an audit sink's lease; its cursor, None while another holds it."""
        ...

    async def advance_sink(self, name: str, owner: str, *, start: int, to: int) -> bool: ...
    async def release_sink(self, name: str, owner: str) -> None: ...
    async def count_audit_after(self, after: int) -> int: ...
    async def sign_anchor(self, anchor: AuditAnchor, signed: dict[str, Any]) -> None:
        """Store an anchor's signed document unless it has one."""
        ...

    async def list_events(self, *, run_id: str | None = None) -> list[AuditEvent]: ...
    async def list_audit(
        self,
        *,
        since: datetime | None = None,
        run_id: str | None = None,
        approval_id: str | None = None,
        after: int = 0,
        limit: int = 1000,
    ) -> list[AuditEvent]:
        """Audit events in the order they were written (by id), at or after `since`, with
        an id above `after`, of one run or approval if given, at most `limit`."""
        ...

    # learned rules ("approve + similar"; store.learned)
    async def create_learned_rule(self, rule: LearnedRule, *, event: AuditEvent) -> None: ...
    async def list_learned_rules(
        self, *, tool: str | None = None, rule_id: str | None = None
    ) -> list[LearnedRule]: ...
    async def learned_rules_in_force(self, tool: str, *, now: datetime) -> list[LearnedRule]:
        """Active, unexpired rules of `tool`, oldest first, without their use counts."""
        ...

    async def get_learned_rule(self, rule_id: str) -> LearnedRule: ...
    async def confirm_learned_rule(
        self, rule_id: str, *, by: str, at: datetime, event: AuditEvent
    ) -> bool:
        """Make a proposed rule active, by someone other than its author, before it expires;
        False (nothing written) otherwise."""
        ...

    async def revoke_learned_rule(
        self, rule_id: str, *, by: str, at: datetime, event: AuditEvent
    ) -> bool: ...
    async def learned_rules_expiring(
        self, *, now: datetime, before: datetime
    ) -> list[LearnedRule]: ...
    async def mark_learned_rule_reminded(self, rule_id: str, *, at: datetime) -> bool:
        """Mark the author reminded of the rule's expiry, once, and queue the DM (outbox
        topic `rule_expiring`, subject the rule) in the same transaction."""
        ...

    async def learned_rule_uses_since(
        self, rule_id: str, *, after: datetime
    ) -> list[tuple[str, str | None, datetime]]:
        """(approval id, run id, created) of each approval the rule approved after then."""
        ...

    async def mark_learned_rule_noted(
        self, rule_id: str, *, since: datetime, until: datetime
    ) -> bool:
        """Move the rule's `noted_until` from `since` (or its creation) to `until`, once,
        and queue the thread note (outbox topic `rule_uses_noted`, subject the approval the
        rule grew from, detail `rule_id`, `since`, `until`) in the same transaction."""
        ...

    async def backtest_requests(self, tool: str, *, limit: int) -> list[dict[str, Any]]:
        """The newest `limit` requests for `tool` from the audit trail, newest first: each
        request event's fields, with `decision`, `decided_by` and `decision_detail` (the
        people's decision on it, None when there was none)."""
        ...

    # limits over history and envelopes (store.spend, store.envelopes)
    async def limit_usage(self, states: Sequence[LimitState]) -> list[tuple[int, int]]:
        """What each limit's window (`LimitState`'s counter, key and window) holds now, by
        the database's clock: (amount, calls) each."""
        ...

    async def holds_of_run(self, run_id: str) -> list[dict[str, Any]]:
        """What a run's calls hold and have not given back, oldest first (`spend_holds` rows)."""
        ...

    async def record_limits(
        self, definitions: Mapping[str, str], events: Mapping[str, AuditEvent], *, at: datetime
    ) -> list[str]:
        """Keep each limit's definition (JSON text); for each that is new or changed since
        last kept, write its event from `events` (with `detail.was`, the old definition).
        Returns the names that changed."""
        ...

    async def create_envelope(self, envelope: Envelope, *, event: AuditEvent) -> None:
        """Store an envelope with its audit event; an active one's live message is queued."""
        ...

    async def list_envelopes(
        self, *, tool: str | None = None, envelope_id: str | None = None, limit: int = 100
    ) -> list[Envelope]: ...
    async def get_envelope(self, envelope_id: str) -> Envelope: ...
    async def envelopes_in_force(self, tool: str, *, now: datetime) -> list[Envelope]:
        """Active, unexpired envelopes of `tool`, oldest first."""
        ...

    async def confirm_envelope(
        self, envelope_id: str, *, by: str, at: datetime, event: AuditEvent
    ) -> bool:
        """Make a proposed envelope active, by someone other than its author, before it
        expires, and queue its live message; False (nothing written) otherwise."""
        ...

    async def revoke_envelope(
        self, envelope_id: str, *, by: str, at: datetime, event: AuditEvent
    ) -> bool:
        """Revoke an envelope that has not ended, and queue the last edit of its message."""
        ...

    async def end_expired_envelopes(self) -> list[str]:
        """Mark each envelope expired by the database's clock ended, once, with its
        `envelope_expired` event and the last edit of its message; their ids."""
        ...

    async def set_envelope_message(
        self, envelope_id: str, *, channel: str | None, ts: str | None
    ) -> None: ...

    # leases (fencing: each lease taken has an epoch one higher than the run's last; a write
    # carrying an older epoch is refused). On PostgreSQL the server's clock decides whether a
    # lease is live and dates it; only the length `until - now` comes from the caller.
    async def acquire_lease(
        self, run_id: str, owner: str, *, until: datetime, now: datetime
    ) -> int | None:
        """Take the lease if it is free, lapsed or already `owner`'s: its new epoch, or None."""
        ...

    async def renew_lease(
        self,
        run_id: str,
        owner: str,
        *,
        until: datetime,
        now: datetime | None = None,
        epoch: int | None = None,
    ) -> bool:
        """Extend `owner`'s lease (in `epoch`, if given); False if it is not held any more."""
        ...

    async def release_lease(self, run_id: str, owner: str, *, epoch: int | None = None) -> None:
        """Give a lease back; a run it leaves running waits in the queue, and the idle
        workers are woken where the dialect has other processes to wake."""
        ...

    # the run queue: a run that needs a driver and has none is ready in the database, and
    # any worker with room claims it by taking its lease
    async def claim_runs(self, owner: str, *, limit: int, until: datetime, now: datetime) -> Claims:
        """Take the leases of up to `limit` of the oldest ready runs no live lease holds and
        no other worker is claiming at this moment. `SchemaTooNew`, taking none, once the
        database's schema is newer than `known_schema` (the worker must step aside)."""
        ...

    async def requeue_runs(self) -> int:
        """Make ready every run that should be moving and is neither driven nor queued
        (running without a live lease, parked with no approval pending); how many."""
        ...

    async def ready_decided_runs(self, run_ids: Sequence[str]) -> None:
        """Make ready each of these parked runs that no approval keeps waiting any more (a
        decision's own transaction does; two decisions committed at once on PostgreSQL may
        each have seen the other pending): what `requeue_runs` does for these runs only."""
        ...

    async def release_own_leases(self, owner: str) -> int:
        """Give back the leases `owner` holds on running runs (it started again under its
        id: its drivers died with the process), putting those runs in the queue; how many."""
        ...

    async def ready_runs(self) -> tuple[int, datetime | None]:
        """How many runs wait in the queue, and the oldest one's `ready_at`."""
        ...

    async def next_lease_lapse(self, *, owner: str, now: datetime) -> float | None:
        """Seconds until the next live lease another worker holds on a running run lapses (by
        the database's clock), or None if there is none."""
        ...

    async def database_now(self) -> datetime:
        """The database's clock (PostgreSQL's server; the host's for SQLite)."""
        ...

    # workers
    async def record_worker(
        self, worker_id: str, *, config_digest: str, started_at: datetime
    ) -> None:
        """A worker says which configuration it runs (at start, and again while it lives);
        seen now by the database's clock."""
        ...

    async def add_passkey(self, passkey: Passkey) -> bool:
        """Register a person's passkey; False if its credential id is known already."""
        ...

    async def list_passkeys(self, person: str) -> list[Passkey]:
        """A person's passkeys, oldest first."""
        ...

    async def use_passkey(self, passkey_id: str, *, person: str, sign_count: int) -> bool:
        """Move a passkey's signature counter forward, by compare-and-set; False (nothing
        changed) if it is not `person`'s or the counter did not grow."""
        ...

    async def keep_challenge(
        self, challenge: str, *, person: str, purpose: str, ttl: float
    ) -> None:
        """Keep a WebAuthn challenge issued to `person` for `purpose`, `ttl` seconds by the
        database's clock (and drop some that expired unanswered)."""
        ...

    async def take_challenge(self, challenge: str) -> tuple[str, str] | None:
        """Use a challenge, once, in one statement: its (person, purpose) the first time
        before it expires; None after, or if it was never issued."""
        ...

    async def list_workers(self, *, within: float) -> list[Worker]:
        """The workers seen in the last `within` seconds, the most recently seen first."""
        ...

    async def runs_to_recover(self, now: datetime, *, owner: str) -> list[str]: ...
    async def interrupted_undos(self, now: datetime, *, owner: str) -> list[str]:
        """Runs whose last `UNDO_STARTED` audit event has no `UNDO_ENDED` event after it (a
        rollback or saga that died, inside an undo or between two) and no live lease, or one
        leased to `owner` from before a restart."""
        ...


@runtime_checkable
class Listens(Protocol):
    """A store that can tell this process about commits made by other processes (PostgreSQL's
    LISTEN/NOTIFY). Each outbox row announces itself by its topic (`approval_requested`,
    `approval_decided`, `approval_reminded`, `approval_voted`, `page_opened`, ...)."""

    async def listen(self, callback: Callable[[str], None]) -> Callable[[], Awaitable[None]]:
        """Call `callback(topic)` for each announced commit; returns the function that stops."""
        ...
