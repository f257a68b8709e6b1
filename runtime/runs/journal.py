"""A driven run's journal: what is written, what is pending, and the one way to write it.

The driver queues what it learns here (the model's reply, tool results and their effect
outcomes, audit events) and `write` turns it into one `Batch`: checkpoints appended by
compare-and-set on seq, so the history is also the lock on the run. Every write carries the
lease's epoch: once another worker took the run over, the store refuses it (fencing), and what
our tools did is kept as evidence on the call's open page for a person, never applied.

Each way a write can fail (fenced off, collided, interrupted, a full disk) is handled here.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import KW_ONLY
from dataclasses import InitVar
from dataclasses import dataclass
from dataclasses import field
from datetime import datetime
from typing import Any

from tenacity import AsyncRetrying
from tenacity import retry_if_exception
from tenacity import wait_exponential_jitter

from runtime.result_masks import ResultMasks
from runtime.runs.lease import Lease
from store import Approval
from store import AuditEvent
from store import Batch
from store import Checkpoint
from store import Committed
from store import Effect
from store import EffectOutcome
from store import EffectStatus
from store import Message
from store import Page
from store import Run
from store import RunState
from store import RunStatus
from store import Store
from store import Usage
from store import errors
from store.base import CallEnded
from store.spend import SpendChange
from store.spend import SpendPlan

log = logging.getLogger("signoff.journal")
_ENDED = frozenset({"done", "failed", "cancelled"})

WRITE_RETRY_MAX_WAIT = 2.0
"""The longest wait between two attempts to write a result in hand (seconds)."""


class Stopped(Exception):
    """The run was changed by someone else (cancelled, taken over); stop driving it.

    `acted_late` pairs what our tools did with the ledger's word on them, where the ledger
    had already recorded an effect as not done (a human resolved it while this driver was
    stalled): someone must look at the outside world.
    """

    def __init__(
        self, *, ended: bool = False, acted_late: Sequence[tuple[EffectOutcome, Effect]] = ()
    ) -> None:
        super().__init__("the run changed under its driver")
        self.ended = ended
        self.acted_late = acted_late


@dataclass(frozen=True, slots=True)
class Sealed:
    """A step's results, complete: the first `messages` unsaved messages, at this step."""

    messages: int
    step: int
    usage: Usage


@dataclass(eq=False, repr=False)
class Journal:
    store: Store
    run: Run
    state: InitVar[RunState]
    _: KW_ONLY
    owner: str
    clock: Callable[[], datetime]
    lease: Lease | None = None
    masks: ResultMasks | None = None
    seq: int = field(init=False)
    step: int = field(init=False)
    usage: Usage = field(init=False)
    status: RunStatus = field(init=False)
    messages: list[Message] = field(init=False)
    unsaved: list[Message] = field(init=False, default_factory=list)
    finished: list[EffectOutcome] = field(init=False, default_factory=list)
    events: list[AuditEvent] = field(init=False, default_factory=list)
    sealed: list[Sealed] = field(init=False, default_factory=list)
    """Complete steps queued but not written yet: each becomes a checkpoint of its own."""
    unsafe: bool = field(init=False, default=False)
    """Whether an unsaved outcome is of a tool that must not run twice."""
    spending: set[str] = field(init=False, default_factory=set)
    """Calls that hold part of a limit or an envelope: how each ends settles or gives
    back what it holds, in the transaction that records the end."""
    spend: list[SpendChange] = field(init=False, default_factory=list)
    asked: bool = field(init=False, default=False)
    """Whether any call of the run has an approval (made or loaded by this driver): only
    then can a person have undone one of its calls, which its verdict must read."""
    ending: dict[str, str] = field(init=False, default_factory=dict)
    """By call id, the approval (under `cool_off` or `undo_for`) that let the call run and
    waits for its effect's end: recorded with it, it opens the undo window."""

    def __post_init__(self, state: RunState) -> None:
        self.seq = state.seq
        self.step = state.step
        self.usage = state.usage
        self.status = state.status
        self.messages = list(state.messages)

    # what the driver queues

    @property
    def transcript(self) -> list[Message]:
        return self.messages + self.unsaved

    @property
    def pending(self) -> bool:
        return bool(self.unsaved or self.finished)

    def add(self, message: Message) -> None:
        self.unsaved.append(message)

    def outcome(self, outcome: EffectOutcome, message: Message, *, rerunnable: bool) -> None:
        """An effect ended: its outcome and the tool message the model will read."""
        self.unsafe = self.unsafe or not rerunnable
        self.finished.append(outcome)
        self.unsaved.append(message)
        if outcome.call_id in self.spending and outcome.status != EffectStatus.IN_DOUBT:
            if outcome.status == EffectStatus.COMPLETED:
                self.spend.append(SpendChange(outcome.call_id, "settle"))
            else:  # it failed: what it held goes back
                self.spend.append(SpendChange(outcome.call_id, "release", "failed"))

    def track(self, approval: Approval) -> None:
        """Note a call's approval, and whether it holds part of a limit or an envelope."""
        self.asked = True
        match = approval.rule
        if approval.call_id and match is not None and (match.limits or match.envelope_id):
            self.spending.add(approval.call_id)
        if approval.call_id and approval.cool_off == "ran" and approval.ran_outcome is None:
            self.ending[approval.call_id] = approval.id

    def _ended_calls(self) -> tuple[CallEnded, ...]:
        """The approvals whose call's effect ends with the outcomes queued."""
        return tuple(
            CallEnded(self.ending[o.call_id], o.status)
            for o in self.finished
            if o.call_id in self.ending
        )

    def event(self, action: str, **detail: Any) -> None:
        self.events.append(
            AuditEvent(
                action=action, actor=self.owner, run_id=self.run.id, detail=detail, at=self.clock()
            )
        )

    def reply(self, message: Message, usage: Usage) -> None:
        """The model answered: a new step, paid for."""
        self.step += 1
        self.usage = self.usage.plus(usage, steps=1)
        self.unsaved.append(message)

    def seal(self) -> None:
        """The queued results are a complete step; written later, they keep their own
        checkpoint, so the history does not depend on which transaction carried them."""
        if not self.sealed or self.sealed[-1].messages < len(self.unsaved):
            self.sealed.append(Sealed(len(self.unsaved), self.step, self.usage))

    def run_now(self) -> Run:
        return self.run.model_copy(
            update={"status": self.status, "step": self.step, "usage": self.usage}
        )

    # writing

    async def write(
        self,
        *,
        status: RunStatus = RunStatus.RUNNING,
        stop_reason: str | None = None,
        error: str | None = None,
        start: Sequence[Effect] = (),
        request: Sequence[Approval] = (),
        pages: Sequence[Page] = (),
        admit: Mapping[str, SpendPlan] | None = None,
    ) -> Committed:
        """Write everything queued, plus these records, in one transaction. `admit`: the
        spend plans of requested approvals (`Batch.admit`)."""
        checkpoints: list[Checkpoint] = []
        cut = 0
        for sealed in self.sealed:
            part = self.unsaved[cut : sealed.messages]
            checkpoints.append(
                self._checkpoint(sealed.step, sealed.usage, part, after=len(checkpoints))
            )
            cut = sealed.messages
        checkpoints.append(
            self._checkpoint(
                self.step,
                self.usage,
                self.unsaved[cut:],
                status=status,
                stop_reason=stop_reason,
                error=error,
                after=len(checkpoints),
            )
        )
        taken = (len(self.unsaved), len(self.finished), len(self.events), len(self.spend))
        spend = list(self.spend)
        if status.value in _ENDED and self.spending:  # calls approved that never ran give back
            spend.append(SpendChange(None, "idle", f"the run {status.value}"))
        batch = Batch(
            run_id=self.run.id,
            owner=self.owner,
            epoch=None if self.lease is None else self.lease.epoch,
            checkpoints=checkpoints,
            finish=tuple(self.finished),
            start=start,
            request=request,
            pages=pages,
            events=tuple(self.events),
            admit=admit or {},
            spend=tuple(spend),
            ended_calls=self._ended_calls(),
        )
        try:
            committed = await self._commit(batch)
        except errors.LeaseLost:
            raise Stopped(acted_late=await self._keep_as_evidence()) from None
        except errors.AlreadyExists as exc:
            await self._fail_unrecordable(exc)
            raise Stopped(ended=True) from None
        except errors.Conflict:
            await self._append_after_interruption()
            raise Stopped() from None
        self.sealed, self.unsafe = [], False
        self.seq += len(checkpoints)
        self.status = status
        self.messages.extend(self.unsaved[: taken[0]])
        del self.unsaved[: taken[0]]
        for outcome in self.finished[: taken[1]]:
            self.ending.pop(outcome.call_id, None)
        del self.finished[: taken[1]]
        del self.events[: taken[2]]
        del self.spend[: taken[3]]
        return committed

    async def _commit(self, batch: Batch) -> Committed:
        """Commit; a transient failure (a full disk, a lock held too long, a dropped
        connection) is retried with backoff while this batch carries a result our tools
        already have and the lease is known to be ours: a known outcome is never dropped
        and turned into an in-doubt one. Nothing in hand: the failure is the caller's."""
        failures: list[BaseException] = []
        try:  # the first attempt outside the retrying loop, which costs a step's CPU per write
            return await self._commit_once(batch)
        except errors.DatabaseError as exc:
            if not self._retry_write(exc, failures):
                raise
        async for attempt in AsyncRetrying(
            retry=retry_if_exception(lambda exc: self._retry_write(exc, failures)),
            wait=wait_exponential_jitter(multiplier=0.05, max=WRITE_RETRY_MAX_WAIT, jitter=0.1),
            reraise=True,
        ):
            with attempt:
                committed = await self._commit_once(batch)
        log.info("run %s: its results are written after %d failure(s)", self.run.id, len(failures))
        return committed

    def _commit_once(self, batch: Batch) -> Awaitable[Committed]:
        """The store's commit, to await; refused here at once if the lease is known lost.
        (A function, not a coroutine: it runs on every step, and a frame less is cheaper.)"""
        if self.lease is not None and self.lease.lost:
            raise errors.LeaseLost(f"the lease on run {self.run.id!r} was lost")
        return self.store.commit(batch)

    def _retry_write(self, exc: BaseException, failures: list[BaseException]) -> bool:
        if not isinstance(exc, errors.DatabaseError) or not self.finished or self.lease is None:
            return False
        if not self.lease.held:
            log.warning(
                "run %s: cannot write the results it holds (%s) nor confirm its lease: stopped "
                "driving it; the worker that takes it over decides what the tool did",
                self.run.id,
                exc,
            )
            return False
        if not failures:
            log.warning(
                "run %s: cannot write the results it holds (%s); retrying while it holds the lease",
                self.run.id,
                exc,
            )
        failures.append(exc)
        return True

    def _checkpoint(
        self,
        step: int,
        usage: Usage,
        messages: Sequence[Message],
        *,
        status: RunStatus = RunStatus.RUNNING,
        stop_reason: str | None = None,
        error: str | None = None,
        after: int = 0,
    ) -> Checkpoint:
        return Checkpoint(
            run_id=self.run.id,
            seq=self.seq + after + 1,
            step=step,
            status=status,
            usage=usage,
            stop_reason=stop_reason,
            error=error,
            messages=tuple(messages),
            created_at=self.clock(),
        )

    async def _keep_as_evidence(self) -> list[tuple[EffectOutcome, Effect]]:
        """Another worker took the run over: what our tools did is not written over its
        ledger (the store refuses it). Each outcome is kept as evidence, in the audit and on
        the call's open page. Returns what our tools did that the ledger records as failed
        (a person said it did not happen): someone must look at the outside world."""
        acted_late = []
        for outcome in self.finished:
            recorded = await self.store.get_effect(self.run.id, outcome.call_id)
            said = evidence(self.owner, self._shown(recorded.tool, outcome))
            log.warning("run %s: fenced off; kept as evidence: %s", self.run.id, said)
            detail = {"call_id": outcome.call_id, "status": outcome.status.value}
            event = AuditEvent(
                action="late_result",
                actor=self.owner,
                run_id=self.run.id,
                at=self.clock(),
                detail=detail | {"result": outcome.result, "error": outcome.error},
            )
            await self.store.record_event(event)
            if recorded.status == EffectStatus.IN_DOUBT:
                await self.store.add_page_evidence(self.run.id, outcome.call_id, f"\n{said}")
            elif (
                outcome.status == EffectStatus.COMPLETED and recorded.status == EffectStatus.FAILED
            ):
                acted_late.append((outcome, recorded))
        return acted_late

    def _shown(self, tool: str, outcome: EffectOutcome) -> EffectOutcome:
        """The outcome as a page and the log may show it: its tool's sensitive result fields
        masked (the audit event keeps it whole, and the surfaces mask it when they show it)."""
        if self.masks is None or outcome.result is None:
            return outcome
        shown = self.masks.result(tool, outcome.result)
        return outcome if shown is outcome.result else outcome.model_copy(update={"result": shown})

    async def _fail_unrecordable(self, exc: errors.AlreadyExists) -> None:
        """A write collided with an existing record: stop the run loudly, never wedge it."""
        log.error("run %s: cannot record its next step: %s", self.run.id, exc)
        if self.status == RunStatus.FAILED:
            return
        self.status = RunStatus.FAILED  # once: a second collision does not try again
        self.unsaved = [m for m in self.unsaved if m.role == "tool"]
        self.sealed = []
        try:
            await self.write(
                status=RunStatus.FAILED,
                stop_reason="error",
                error=f"could not record the step: {exc}",
            )
        except Stopped:
            log.error("run %s: could not record its failure either", self.run.id)

    async def _append_after_interruption(self) -> None:
        """The run was changed (cancelled) mid-step: keep what happened, on top of the change."""
        if not self.finished:
            return
        latest = await self.store.load_state(self.run.id)
        checkpoint = Checkpoint(
            run_id=self.run.id,
            seq=latest.seq + 1,
            step=latest.step,
            status=latest.status,
            usage=latest.usage,
            stop_reason=latest.stop_reason,
            error=latest.error,
            messages=tuple(m for m in self.unsaved if m.role == "tool"),
            created_at=self.clock(),
        )
        epoch = None if self.lease is None else self.lease.epoch
        batch = Batch(
            run_id=self.run.id,
            owner=self.owner,
            epoch=epoch,
            checkpoints=[checkpoint],
            finish=tuple(self.finished),
            spend=tuple(self.spend),
            ended_calls=self._ended_calls(),
        )
        try:
            await self.store.commit(batch)
        except errors.LeaseLost:
            await self._keep_as_evidence()
        except errors.Conflict as exc:
            log.warning("run %s changed again; outcomes left to recovery: %s", self.run.id, exc)


def evidence(worker: str, outcome: EffectOutcome) -> str:
    """What a fenced-off worker reported, in the words a page shows."""
    what = f"{outcome.status.value} at {outcome.finished_at:%H:%M:%S}"
    if outcome.result is not None:
        what += f", result {outcome.result!r}"
    if outcome.error:
        what += f", error {outcome.error}"
    return f"The worker that lost its lease ({worker}) reported: {what}."
