"""`signoff serve`: the long-running process.

It recovers runs left mid-flight, re-arms reminders and timeouts from the store, re-sends
undelivered callbacks, delivers the Slack outbox, and serves the HTTP API and `/slack/events`
(or Socket Mode), `/healthz`, `/readyz` and `/metrics` until SIGINT or SIGTERM.
"""

from __future__ import annotations

import asyncio
import errno
import logging
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Iterable
from contextlib import suppress

from aiohttp import web

from bot import approvers
from bot import console
from bot import email
from bot import health
from bot.agents import unguarded_warnings
from bot.api import api_app
from bot.aside import unless_aside
from bot.callback_policy import CallbackPolicy
from bot.logs import redact_secrets
from bot.metrics import CLOCK_SKEW
from bot.metrics import QUEUE_CAPACITY
from bot.metrics import QUEUE_DRIVING
from bot.metrics import RUNS_CLAIMED
from bot.metrics import MetricsNotifier
from bot.metrics import PrometheusTelemetry
from bot.outbox import OutboxNudge
from bot.people import SlackPeople
from bot.settings import ConfigError
from bot.settings import Settings
from bot.settings import check_token_secrets
from bot.settings import secret
from bot.slack import once
from bot.slack import rule_notes
from bot.slack.app import SlackSurface
from bot.slack.app import check_slack_settings
from bot.slack.app import slack_surface
from bot.stopping import run_steps
from bot.stopping import stop_on_signals
from bot.wiring import Process
from bot.wiring import assemble
from bot.workers import ANNOUNCE_EVERY
from bot.workers import Workers
from runtime import Agent
from runtime import FanOut
from runtime import Notifier
from runtime import Runtime
from runtime.approvals import open_policies
from runtime.runs import RunQueue
from runtime.runs import Wakeups

log = logging.getLogger("signoff.server")
RECOVER_EVERY = 30.0
SKEW_EVERY = 60.0
RULE_REMINDERS_EVERY = 600.0  # learned rules due the author's "expires in a day" DM
RULE_NOTES_EVERY = 900.0  # one thread note per rule per quarter hour, at most
ENVELOPES_EVERY = 5.0  # envelopes that expired are ended (audited, their message edited)
ANCHOR_EVERY = 86_400.0  # the audit chain's head, signed once a day (and at start-up)
REQUESTS_WITHIN = 1.0
"""Seconds requests in flight (a long poll, a click) get to finish on the way out."""
BACKGROUND_GRACE = 1.0
"""Seconds background work (a resumed run, a callback) gets on the way out; all durable."""


async def serve(
    settings: Settings,
    *,
    stop: asyncio.Event | None = None,
    extend: Callable[[web.Application, Process], None] | None = None,
) -> None:
    """Serve until `stop` (default: SIGINT or SIGTERM); `extend` adds routes to the app
    (`signoff dev` mounts its workspace view). Slack is reached in the background: the
    process serves and is ready whether or not Slack answers, and a refusal only a person
    can fix (a revoked token, a channel set by name) stops it with that `ConfigError`."""
    _check(settings)
    redact_secrets(settings.secrets())
    stop = stop or stop_on_signals()
    fatal: list[ConfigError] = []

    def give_up(exc: ConfigError) -> None:
        fatal.append(exc)
        stop.set()

    nudge = OutboxNudge()
    metrics = MetricsNotifier(settings.runtime.policies)
    mail = email.EmailNudge()
    told: list[Notifier] = [metrics, mail] if settings.api.only else [nudge, metrics, mail]
    process = await assemble(
        settings, notifier=FanOut(told), telemetry=PrometheusTelemetry(), create_key=True
    )
    rt = process.runtime
    for warning in [*startup_warnings(settings, rt.agents.values()), *api_warnings(settings)]:
        log.warning("%s", warning)
    app = api_app(
        rt,
        background=process.background,
        token=secret(settings.api.token),
        tokens=settings.api.tokens,
        callbacks=CallbackPolicy(settings.api.callback_allowed_hosts),
        rate_per_minute=settings.api.rate_per_minute,
    )
    slack = (
        None
        if settings.api.only
        else slack_surface(settings, rt, process.background, nudge, on_fatal=give_up)
    )
    if slack is not None:
        slack.mount(app)
    _pages(app, settings, process, SlackPeople(slack.client) if slack is not None else None)
    if extend is not None:
        extend(app, process)
    scheduler = rt.scheduler
    # Other processes' commits (PostgreSQL): a decision resumes its run here at once if this
    # process takes its lease first; new deadlines re-arm the scheduler; rows wake the sender.
    queue = _run_queue(rt, settings)
    wakeups = Wakeups(rt, schedule=scheduler.tick, outbox=nudge.wake, queue=queue)
    mail.sender = mailer = email.email_sender(settings, rt)
    running = {"scheduler": lambda: scheduler.running, "email_sender": lambda: mailer.running}
    if slack is not None:
        running["outbox_sender"] = lambda: slack.sender.running
    skew = process.database.clock_skew(rt.clock, unready_at=rt.lease_ttl / 4, report=CLOCK_SKEW.set)
    workers = Workers(rt, rt.clock())
    readiness = health.Readiness(
        rt.queries, running, {"clock_skew": skew.problem}, config=workers.compare
    )
    health.mount(app, readiness, settings.runtime.policies)
    runner = web.AppRunner(app, shutdown_timeout=REQUESTS_WITHIN)
    lapses: asyncio.Task[None] | None = None
    try:
        # Bind first: a second server started by mistake fails before it touches any run.
        await runner.setup()
        port = await _listen(runner, settings.api.host, settings.api.port)
        await scheduler.start()
        await _measure(skew.measure)
        scheduler.every(SKEW_EVERY, lambda: _measure(skew.measure), name="signoff-clock-skew")
        # Pending approvals asked before approvals carried their authority get it now, from
        # the policy in force here; then this worker says which configuration it runs.
        await rt.fill_authority()
        await _announce(workers)
        scheduler.every(ANNOUNCE_EVERY, lambda: _announce(workers), name="signoff-workers")
        if slack is not None:
            await slack.start()
        mailer.start()
        if await wakeups.start():
            log.info("listening for other processes' decisions and outbox rows")
        # Runs wait in the database's queue; this worker claims what it has room for.
        process.background.spawn(rt.recover_into_queue(), name="recover")
        # Runs stranded since start-up (a driver that crashed in this process, a decision
        # whose resume found the run busy) are queued again within a poll; a run whose
        # lease another worker stopped renewing, as soon as that lease lapses.
        lapses = asyncio.create_task(rt.follow_lapses(poll=RECOVER_EVERY), name="lapses")
        _periodic_jobs(process, slack)
        process.background.spawn(process.callbacks.redeliver(), name="redeliver callbacks")
        _proof(settings, process, stop)
        log.info(
            "signoff serving on http://%s:%d (worker %s)", settings.api.host, port, rt.worker_id
        )
        await stop.wait()
        log.info("signoff stopping: runs in flight keep their checkpoints and resume on restart")
    finally:
        await run_steps(
            [
                ("driving runs", lambda: _stop_driving(lapses, wakeups, queue)),
                ("the scheduler", scheduler.stop),
                ("Slack", slack.stop if slack is not None else _nothing),
                ("e-mail", mailer.stop),
                ("the HTTP server", runner.cleanup),
                ("the database", lambda: process.close(grace=BACKGROUND_GRACE)),
            ]
        )
    if fatal:
        raise fatal[0]


def _check(settings: Settings) -> None:
    """Refuse a configuration only a person can fix before anything is opened."""
    check_slack_settings(settings)
    check_token_secrets(settings)
    approvers.check_settings(settings.web)
    email.check_settings(settings)


def _pages(
    app: web.Application, settings: Settings, process: Process, people: SlackPeople | None
) -> None:
    """The run console (/console/) and the approvals page (/approvals)."""
    console.mount(app, people=people)
    approvers.mount(app, process.runtime, settings.web, process.background)


async def _listen(runner: web.AppRunner, host: str, port: int) -> int:
    """Listen on host:port; the port it got (port 0: any free one). A port in use is one
    line that says which and how to choose another."""
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        raise ConfigError(
            f"port {port} on {host} is in use (another signoff serve?): choose another with "
            "`signoff serve --port N` or SIGNOFF_PORT"
        ) from None
    return int(runner.addresses[0][1])


def _periodic_jobs(process: Process, slack: SlackSurface | None) -> None:
    """Callbacks not delivered yet are sent again (including those that failed every
    attempt: a receiver that was down gets its decision once it is back), learned rules'
    authors reminded, expired envelopes ended. None of them runs, and Slack's side stops,
    once this worker stepped aside for a newer schema."""
    rt = process.runtime
    redeliver = unless_aside(rt.aside, process.callbacks.redeliver)
    rt.scheduler.every(RECOVER_EVERY, redeliver, name="signoff-callbacks")
    wake = slack.sender.wake if slack is not None else None
    end = unless_aside(rt.aside, lambda: _end_envelopes(rt, wake))
    rt.scheduler.every(ENVELOPES_EVERY, end, name="signoff-envelopes")
    if slack is None:
        return
    if process.settings.runtime.learned_rules.writers:
        _remind_rule_authors(rt, slack.sender.wake)
    if slack.once is not None:  # notes of Slack's requests past their hour
        forget = unless_aside(rt.aside, slack.once.prune)
        rt.scheduler.every(once.PRUNE_EVERY, forget, name="signoff-slack-inbound")
    stop_slack = slack.stop
    rt.aside.on_step_aside(lambda: process.background.spawn(stop_slack(), name="aside"))


def _remind_rule_authors(rt: Runtime, wake: Callable[[], None]) -> None:
    rt.scheduler.every(
        RULE_REMINDERS_EVERY,
        unless_aside(rt.aside, lambda: rule_notes.remind_expiring(rt, wake)),
        name="signoff-rule-reminders",
    )
    rt.scheduler.every(
        RULE_NOTES_EVERY,
        unless_aside(rt.aside, lambda: rule_notes.note_uses(rt, wake)),
        name="signoff-rule-notes",
    )


async def _end_envelopes(rt: Runtime, wake: Callable[[], None] | None) -> None:
    """End the envelopes that expired, once each (by the database's clock)."""
    if await rt.spend.end_expired() and wake is not None:
        wake()


async def _nothing() -> None:
    return None


async def _stop_driving(
    lapses: asyncio.Task[None] | None, wakeups: Wakeups, queue: RunQueue
) -> None:
    """Stop following lapses, listening and claiming; the runs being driven keep their
    checkpoints and go back to the queue."""
    if lapses is not None:
        lapses.cancel()
        with suppress(asyncio.CancelledError):
            await lapses
    await wakeups.stop()
    await queue.stop()


def _run_queue(rt: Runtime, settings: Settings) -> RunQueue:
    """The run queue this worker drives through, counted in /metrics."""
    queue = rt.serve_queue(
        capacity=settings.workers.capacity,
        poll=settings.workers.poll_seconds,
        on_claimed=RUNS_CLAIMED.inc,
    )
    QUEUE_CAPACITY.set(queue.capacity)
    QUEUE_DRIVING.set_function(lambda: len(queue.driving))
    return queue


def _anchor_daily(process: Process) -> None:
    """Anchor the audit chain's head now and once a day (signed with the receipt key)."""
    rt = process.runtime
    rt.scheduler.every(ANCHOR_EVERY, lambda: _anchor(rt), name="signoff-audit-anchor")
    process.background.spawn(_anchor(rt), name="anchor the audit trail")


def _proof(settings: Settings, process: Process, stop: asyncio.Event) -> None:
    """Anchor the audit chain now and daily; stream the trail to the configured sink until
    `stop` (a background task: closing the process waits for it)."""
    _anchor_daily(process)
    url = settings.proof.audit_sink_url
    if not url:
        return
    from bot.audit_sink import AuditSink
    from bot.audit_sink import describe
    from bot.audit_sink import transport_for
    from bot.wiring import callback_secret

    signing = secret(settings.proof.audit_sink_secret) or callback_secret(settings)
    log.info("streaming the audit trail to %s", describe(url))
    sink = AuditSink(process.runtime, transport_for(url, signing))
    process.background.spawn(sink.run(stop), name="audit sink")


async def _anchor(rt: Runtime) -> None:
    """Anchor and sign the audit chain's head; a failure is only logged (tomorrow's will do)."""
    try:
        await rt.anchor_audit()
    except Exception:
        log.exception("could not anchor the audit trail")


async def _announce(workers: Workers) -> None:
    """Record this worker's configuration digest; a failure is only logged (it is retried)."""
    try:
        await workers.announce()
    except Exception:
        log.exception("could not record this worker's configuration digest")


async def _measure(measure: Callable[[], Awaitable[float]]) -> None:
    """Compare this process's clock with the database's; a failure is only logged."""
    try:
        await measure()
    except Exception:
        log.exception("could not compare this process's clock with the database's")


def api_warnings(settings: Settings) -> list[str]:
    """What `serve` says at start-up about who may use the HTTP API."""
    warnings = []
    if settings.api.token is not None:
        warnings.append(
            "SIGNOFF_API_TOKEN grants every scope, approvals:request and approvals:decide "
            "included: whoever holds it can approve what it asked for. Give each client a "
            "named token with only the scopes it needs (api_tokens in signoff.toml)"
        )
    for name, token in settings.api.tokens.items():
        if token.allow_request_and_decide and not token.revoked:
            warnings.append(
                f"API token {name!r} has approvals:request and approvals:decide "
                "(allow_request_and_decide): it can approve its own requests"
            )
    if settings.api.tokens and settings.api.callback_secret is None and settings.api.token is None:
        warnings.append(
            "no SIGNOFF_CALLBACK_SECRET: decision callbacks (callback_url) wait unsent until "
            "one is set (named API tokens never sign them)"
        )
    if settings.api.token is None and not settings.api.tokens:
        warnings.append(
            "no api_tokens (SIGNOFF_API_TOKENS) or SIGNOFF_API_TOKEN: the HTTP API (/v1/...) is off"
        )
    return warnings


def startup_warnings(settings: Settings, agents: Iterable[Agent]) -> list[str]:
    """What an operator should know before the first run: deliberate exceptions to asking a
    human, and policies that cannot work as written."""
    agents = list(agents)
    warnings = []
    for agent in agents:
        for name in agent.approval_waived:
            why = agent.tools[name].description
            warnings.append(f"agent {agent.name}: {name} runs WITHOUT approval (by design: {why})")
    warnings += unguarded_warnings(settings, agents)
    for name in open_policies(settings.runtime.policies):
        warnings.append(f"policy {name} names no approvers: anyone but the requester may approve")
    for name in ["default", *settings.runtime.policies.tools]:
        policy = settings.runtime.policies.for_tool(name)[1]
        if policy.allow_edit and policy.required_approvals > 1:
            warnings.append(
                f"policy {name}: allow_edit has no effect with required_approvals = "
                f"{policy.required_approvals} (approvers vote on the call as proposed)"
            )
    return warnings
