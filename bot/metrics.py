"""Prometheus metrics of one `signoff serve` process, at `GET /metrics`.

Two kinds. What happens in this process (steps, tokens, effects, decisions, reminders, pages,
callback failures, runs taken over) are counters and histograms kept in memory, fed by the
runtime's `Telemetry` hooks and its notifier; several processes on one PostgreSQL each
expose their own, and Prometheus sums them. What the database holds now (runs by status,
pending approvals, effects in doubt, open pages, the outbox backlog) is read at each scrape
with one query that touches indexes only (`Queries.counts`), so a scrape costs the
same however long the history grows.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence
from datetime import UTC
from datetime import datetime

from aiohttp import web
from prometheus_client import REGISTRY
from prometheus_client import CollectorRegistry
from prometheus_client import Counter
from prometheus_client import Gauge
from prometheus_client import Histogram
from prometheus_client import generate_latest
from prometheus_client.core import CounterMetricFamily
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.core import Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from runtime import NullNotifier
from runtime.approvals import Policies
from runtime.approvals import policy_of
from runtime.approvals import slo_missed
from runtime.queries import Counts
from runtime.queries import Queries
from runtime.records import SYSTEM_ACTOR
from runtime.records import Approval
from runtime.records import LearnedRule
from runtime.records import Page
from runtime.records import Run
from runtime.records import StoreError
from runtime.records import Usage

log = logging.getLogger("signoff.metrics")
DURATIONS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
DECISION_TIMES = (10, 30, 60, 300, 900, 1800, 3600, 4 * 3600, 12 * 3600, 86400, 3 * 86400)

STEPS = Counter("signoff_steps", "Model replies recorded (steps), by agent.", ["agent"])
STEP_SECONDS = Histogram(
    "signoff_step_duration_seconds",
    "Time to a model reply, by agent.",
    ["agent"],
    buckets=DURATIONS,
)
TOKENS = Counter("signoff_model_tokens", "Model tokens used, by agent and kind.", ["agent", "kind"])
COST = Counter("signoff_model_cost_dollars", "Model cost, by agent.", ["agent"])
EFFECTS = Counter(
    "signoff_effects",
    "Mutating tool executions that ended, by classification and outcome.",
    ["classification", "outcome"],
)
EFFECT_SECONDS = Histogram(
    "signoff_effect_duration_seconds",
    "Time a mutating tool took, by classification.",
    ["classification"],
    buckets=DURATIONS,
)
RUNS_FINISHED = Counter("signoff_runs_finished", "Runs that ended, by status.", ["status"])
APPROVALS_REQUESTED = Counter("signoff_approvals_requested", "Approvals requested.")
APPROVALS_DECIDED = Counter(
    "signoff_approvals_decided",
    "Approvals decided, by outcome (approved, declined, expired, withdrawn).",
    ["outcome"],
)
DECISION_SECONDS = Histogram(
    "signoff_approval_decision_seconds",
    "Time from an approval's request to its decision.",
    buckets=DECISION_TIMES,
)
TIME_TO_DECISION = Histogram(
    "signoff_approval_time_to_decision_seconds",
    "Time from an approval's request to its decision, by policy and outcome.",
    ["policy", "outcome"],
    buckets=DECISION_TIMES,
)
PAST_TARGET = Counter(
    "signoff_approvals_past_target",
    "Approvals decided later than their policy's decision target (decide_within), by policy.",
    ["policy"],
)
REMINDERS = Counter("signoff_approval_reminders", "Approval reminders sent.")
ESCALATIONS = Counter("signoff_approval_escalations", "Approvals escalated.")
PAGES = Counter("signoff_pages_opened", "Pages opened: effects a human must handle.")
CALLBACK_FAILURES = Counter(
    "signoff_callback_failures", "Decision callbacks that failed every attempt."
)
TAKEOVERS = Counter(
    "signoff_lease_takeovers", "Runs whose worker was gone, taken over by this process."
)
SHADOW_DECISIONS = Counter(
    "signoff_shadow_decisions",
    "What a rule, limit or envelope in shadow mode would have done to a call (it decided "
    "nothing): would = approve, ask or deny.",
    ["kind", "name", "would"],
)
RUNS_CLAIMED = Counter(
    "signoff_worker_runs_claimed", "Runs this process claimed from the run queue to drive."
)
QUEUE_DRIVING = Gauge(
    "signoff_worker_runs_driving", "Runs this process drives now, claimed from the run queue."
)
QUEUE_CAPACITY = Gauge(
    "signoff_worker_capacity", "Runs this process drives at once at most (SIGNOFF_WORKER_CAPACITY)."
)
CLOCK_SKEW = Gauge(
    "signoff_clock_skew_seconds",
    "How far this process's clock is ahead of the database's (negative: behind).",
)
CONFIG_DISAGREEMENT = Gauge(
    "signoff_config_disagreement",
    "Other live workers that run another configuration digest than this process.",
)
CONFIG_INFO = Gauge(
    "signoff_config_info",
    "The configuration digest this process runs (the value is 1).",
    ["digest"],
)


LOOP_BLOCKED = Histogram(
    "signoff_event_loop_blocked_seconds",
    "Times the event loop was blocked past a third of a lease (its leases renewed from a "
    "thread meanwhile), by the tool that blocked it.",
    ["tool"],
    buckets=DURATIONS,
)


class PrometheusTelemetry:
    """The runtime's `Telemetry`, counted in this process."""

    def model_step(self, agent: str, seconds: float, usage: Usage) -> None:
        STEPS.labels(agent).inc()
        STEP_SECONDS.labels(agent).observe(seconds)
        TOKENS.labels(agent, "input").inc(usage.input_tokens)
        TOKENS.labels(agent, "output").inc(usage.output_tokens)
        COST.labels(agent).inc(usage.cost)

    def effect_ended(self, tool: str, classification: str, outcome: str, seconds: float) -> None:
        EFFECTS.labels(classification, outcome).inc()
        EFFECT_SECONDS.labels(classification).observe(seconds)

    def leases_taken_over(self, count: int) -> None:
        TAKEOVERS.inc(count)

    def loop_blocked(self, tool: str, seconds: float) -> None:
        LOOP_BLOCKED.labels(tool).observe(seconds)

    def shadow_decision(self, kind: str, name: str, would: str) -> None:
        SHADOW_DECISIONS.labels(kind, name, would).inc()


class MetricsNotifier(NullNotifier):
    """Counts what the runtime announces: requests, decisions, reminders, pages, ends."""

    def __init__(self, policies: Policies | None = None) -> None:
        self.policies = policies or Policies()

    async def approval_requested(self, approval: Approval, run: Run | None) -> None:
        APPROVALS_REQUESTED.inc()

    async def approval_decided(self, approval: Approval, run: Run | None) -> None:
        if approval.decided_at is None:
            return  # a vote towards a quorum: not decided yet
        APPROVALS_DECIDED.labels(outcome(approval)).inc()
        waited = (approval.decided_at - approval.created_at).total_seconds()
        DECISION_SECONDS.observe(waited)
        TIME_TO_DECISION.labels(approval.policy, outcome(approval)).observe(waited)
        policy = policy_of(approval, self.policies)
        if slo_missed(approval, policy, approval.decided_at):
            PAST_TARGET.labels(approval.policy).inc()

    async def reminder_due(self, approval: Approval, run: Run | None, *, escalated: bool) -> None:
        (ESCALATIONS if escalated else REMINDERS).inc()

    async def effect_needs_human(self, page: Page, run: Run | None) -> None:
        PAGES.inc()

    async def run_finished(self, run: Run) -> None:
        RUNS_FINISHED.labels(run.status.value).inc()


def outcome(approval: Approval) -> str:
    if approval.withdrawn:
        return "withdrawn"
    if approval.decided_by == SYSTEM_ACTOR and approval.reason == "expired":
        return "expired"
    return approval.state.value


class StoreGauges(Collector):
    """What the database holds at one scrape, as gauges."""

    def __init__(self, counts: Counts, now: datetime) -> None:
        self.counts = counts
        self.now = now

    def collect(self) -> Iterator[Metric]:
        c = self.counts
        runs = GaugeMetricFamily("signoff_runs", "Runs not finished, by status.", labels=["status"])
        runs.add_metric(["running"], c.runs_running)
        runs.add_metric(["waiting_approval"], c.runs_waiting_approval)
        yield runs
        yield _gauge(
            "signoff_approvals_pending", "Approvals waiting for a decision.", c.approvals_pending
        )
        yield _gauge(
            "signoff_approval_oldest_pending_age_seconds",
            "Age of the oldest pending approval (0 when none).",
            self._age(c.oldest_pending_at),
        )
        yield _gauge(
            "signoff_effects_in_doubt",
            "Effects in doubt: a human must settle them.",
            c.effects_in_doubt,
        )
        yield _gauge("signoff_pages_open", "Pages nobody acknowledged yet.", c.pages_open)
        yield _gauge("signoff_outbox_backlog", "Notifications not delivered yet.", c.outbox_backlog)
        yield _gauge(
            "signoff_outbox_oldest_undelivered_age_seconds",
            "Age of the oldest undelivered notification (0 when none).",
            self._age(c.outbox_oldest_at),
        )

    def _age(self, since: datetime | None) -> float:
        return max(0.0, (self.now - since).total_seconds()) if since else 0.0


class LearnedRuleUses(Collector):
    """How many approvals each learned rule approved ("approve + similar"): its rate is the
    rule's auto-approval rate."""

    def __init__(self, rules: Sequence[LearnedRule], now: datetime) -> None:
        self.rules = rules
        self.now = now

    def collect(self) -> Iterator[Metric]:
        uses = CounterMetricFamily(
            "signoff_learned_rule_uses",
            "Approvals a learned rule approved at once, by rule, tool and status.",
            labels=["rule", "tool", "status"],
        )
        for rule in self.rules:
            uses.add_metric([rule.id, rule.tool, rule.status(self.now)], rule.uses)
        yield uses


class PendingPastTarget(Collector):
    """Approvals still pending past their policy's decision target (`decide_within`), by
    policy: the decided-late counter sees an approval only once someone decides it; this
    sees the ones nobody has yet. A policy with a target shows 0 when none is late."""

    def __init__(self, pending: Sequence[Approval], policies: Policies, now: datetime) -> None:
        self.pending = pending
        self.policies = policies
        self.now = now

    def collect(self) -> Iterator[Metric]:
        late: dict[str, int] = {name: 0 for name in targeted_policies(self.policies)}
        for approval in self.pending:
            policy = policy_of(approval, self.policies)
            if policy.decide_within is None:
                continue
            late.setdefault(approval.policy, 0)
            if slo_missed(approval, policy, self.now):
                late[approval.policy] += 1
        gauge = GaugeMetricFamily(
            "signoff_approvals_pending_past_target",
            "Approvals still pending past their policy's decision target (decide_within), "
            "by policy.",
            labels=["policy"],
        )
        for name, count in sorted(late.items()):
            gauge.add_metric([name], count)
        yield gauge


def targeted_policies(policies: Policies) -> list[str]:
    """The names of the policies that set a decision target (merged over the default)."""
    names = ["default", *policies.tools]
    return [n for n in names if policies.for_tool(n)[1].decide_within is not None]


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def metrics_handler(
    queries: Queries, policies: Policies | None = None
) -> Callable[[web.Request], Awaitable[web.Response]]:
    """`GET /metrics`: this process's counters, then the database's gauges (with `policies`,
    the approvals pending past their decision targets too)."""

    async def metrics(request: web.Request) -> web.Response:
        try:
            snapshot = await queries.metrics(with_pending=policies is not None)
        except StoreError as exc:  # the scrape fails visibly (`up` 0), as JSON like any error
            log.warning("metrics: the database did not answer: %s", exc)
            return web.json_response({"error": "the database did not answer"}, status=503)
        gauges = CollectorRegistry(auto_describe=False)
        now = datetime.now(UTC)
        gauges.register(StoreGauges(snapshot.counts, now))
        gauges.register(LearnedRuleUses(snapshot.learned_rules, now))
        if policies is not None:
            gauges.register(PendingPastTarget(snapshot.pending, policies, now))
        body = generate_latest(REGISTRY) + generate_latest(gauges)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    return metrics


AUDIT_SINK_LAG = Gauge(
    "signoff_audit_sink_lag_events", "Audit events written and not yet delivered to the sink"
)
AUDIT_SINK_DELIVERED = Counter(
    "signoff_audit_sink_delivered_total", "Audit events the sink delivered (at least once)"
)
AUDIT_SINK_FAILURES = Counter(
    "signoff_audit_sink_failures_total", "Attempts to deliver audit events that failed"
)
