"""What the runtime's modules share, passed to them explicitly: the store, the clock, this
worker's identity and lease, the agents, the in-process locks, facts, telemetry, the
announcer, the result masks and whether the worker stepped aside. The `Runtime` facade
builds one; nothing below it needs the facade."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from datetime import datetime

from runtime import errors
from runtime import lookups
from runtime.agent import Agent
from runtime.announcer import Announcer
from runtime.approvals.policy import Policies
from runtime.facts import FactStore
from runtime.ports import LearnedRules
from runtime.result_masks import ResultMasks
from runtime.runs.aside import Aside
from runtime.runs.lease import Lease
from runtime.runs.lease import RunLocks
from runtime.runs.lease import hold_lease
from runtime.runs.lease_keeper import LeaseKeeper
from runtime.runs.telemetry import Telemetry
from runtime.scheduler import Timers
from runtime.signing import Signer
from runtime.tools import Tool
from store import Approval
from store import Batch
from store import Committed
from store import Run
from store import Store
from store import errors as store_errors


@dataclass(eq=False)
class Deps:
    store: Store
    clock: Callable[[], datetime]
    worker_id: str
    lease_ttl: float
    agents: Mapping[str, Agent]
    locks: RunLocks
    facts: FactStore
    telemetry: Telemetry
    announcer: Announcer
    timers: Timers
    """The runtime's one scheduler: leases are renewed on it."""
    leases: dict[str, Lease] = field(default_factory=dict)
    """The runs this process holds a lease on, by id."""
    claimed: dict[str, int] = field(default_factory=dict)
    """Runs this process's queue claimed and has not started driving yet: their epochs."""
    learned: LearnedRules | None = None
    config_digest: str | None = None
    """The digest of the configuration this process runs (recorded on each approval it asks,
    and in the workers table by `signoff serve`)."""
    result_masks: ResultMasks = field(default_factory=lambda: ResultMasks(Policies()))
    signer: Signer | None = None
    """Signs decisions' receipts (and audit anchors); None: nothing is signed."""
    """The policies' sensitive result fields, masked in what the runtime itself says about a
    result (evidence on a page, a log line)."""
    aside: Aside = field(default_factory=Aside)
    """Whether this worker stepped aside for a newer schema (it then drives nothing more)."""
    keeper: LeaseKeeper | None = None
    """Keeps the leases while a tool blocks the event loop (`runtime.runs.lease_keeper`)."""

    async def run(self, run_id: str) -> Run:
        """The run, or `RunNotFound`."""
        return await lookups.run(self.store, run_id)

    async def find_run(self, run_id: str | None) -> Run | None:
        if run_id is None:
            return None
        try:
            return await self.store.get_run(run_id)
        except store_errors.NotFound:
            return None

    def agent(self, name: str) -> Agent:
        try:
            return self.agents[name]
        except KeyError:
            known = ", ".join(self.agents) or "none"
            raise errors.UnknownAgent(f"no agent {name!r}; this runtime has: {known}") from None

    async def tool_for(self, approval: Approval) -> Tool | None:
        """The tool an approval is about, if its run's agent is here."""
        run = await self.find_run(approval.run_id)
        agent = self.agents.get(run.agent) if run else None
        return agent.tools.get(approval.tool) if agent else None

    async def with_learned_rule(self, approval: Approval, run: Run | None) -> Approval:
        """The approval as a learned rule in force leaves it (approved at once, or as is)."""
        return approval if self.learned is None else await self.learned.apply(approval, run)

    def lease(self, run_id: str) -> AbstractAsyncContextManager[Lease]:
        """Hold the run's lease in the store while working on it (fenced writes)."""
        return hold_lease(
            self.store,
            run_id,
            self.worker_id,
            ttl=self.lease_ttl,
            timers=self.timers,
            held=self.leases,
            claimed=self.claimed,
            keeper=self.keeper,
        )

    def epoch(self, run_id: str) -> int | None:
        """The epoch of the lease this process holds on the run (what its writes carry)."""
        lease = self.leases.get(run_id)
        return None if lease is None else lease.epoch

    async def commit(self, batch: Batch) -> Committed:
        """Write a batch of a run this process holds (`lease`), fenced by its lease: refused
        (`LeaseLost`) once another worker took the run over, even under the same id."""
        owned = replace(batch, owner=self.worker_id, epoch=self.epoch(batch.run_id))
        return await self.store.commit(owned)
