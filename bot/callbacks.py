"""Decision callbacks for approvals requested over the HTTP API: signed, retried, durable.

The body is the approval as JSON. `X-Signoff-Timestamp` is Unix seconds and
`X-Signoff-Signature` is `v1=` + hex HMAC-SHA256 of `v1:<timestamp>:<body>` with the shared
secret, the way Slack signs its requests. Delivery status is stored on the approval, so a
callback interrupted by a restart is sent again at start-up. Every attempt is audited as it
ends (`callback_attempt`: the receiver's status or the error, and when it is tried next),
which `GET /v1/approvals/{id}/deliveries` lists; each round's outcome is audited too
(`callback_delivered`, `callback_failed`).

Where a callback may go is `bot.callback_policy`'s to say, checked again when it is sent: the
URL against the allowed hosts, and the addresses the connection uses (resolved through the
policy, so what was checked is what is connected to). Redirects are not followed; every
attempt has a timeout.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import socket
import time
from dataclasses import KW_ONLY
from dataclasses import dataclass
from dataclasses import field
from datetime import timedelta

import aiohttp
from aiohttp.abc import AbstractResolver
from aiohttp.abc import ResolveResult
from tenacity import AsyncRetrying
from tenacity import RetryCallState
from tenacity import retry_if_result
from tenacity import stop_after_attempt
from tenacity import wait_exponential_jitter

from bot.callback_policy import CallbackPolicy
from bot.callback_policy import CallbackRefused
from bot.json_views import approval_view
from bot.metrics import CALLBACK_FAILURES
from bot.tasks import Background
from runtime import NullNotifier
from runtime.deliveries import Deliveries
from runtime.records import Approval
from runtime.records import AuditEvent
from runtime.records import Delivery
from runtime.records import Run
from runtime.records import utcnow

log = logging.getLogger("signoff.callbacks")
MAX_DELAY = 30.0
"""The longest wait between two attempts at one callback (the waits double from the first)."""


@dataclass(frozen=True)
class Attempt:
    """What one POST came to: the receiver's status, if it answered, and what went wrong
    ("" once delivered)."""

    status: int | None
    failure: str


def sign(secret: str, timestamp: str, body: bytes) -> str:
    base = b"v1:" + timestamp.encode() + b":" + body
    return "v1=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


@dataclass(eq=False)
class CallbackNotifier(NullNotifier):
    """Sends each decided approval to its callback URL, if it has one."""

    deliveries: Deliveries
    secret: str = field(repr=False)  # a repr in a log must not carry it
    background: Background
    _: KW_ONLY
    attempts: int = 6
    first_delay: float = 0.5
    timeout: float = 10.0
    """Seconds each attempt may take."""
    hand_over: bool = False
    """Whether a short-lived process (the CLI) leaves a callback it could not deliver
    pending, for a server's periodic redelivery, instead of marking it failed."""
    policy: CallbackPolicy = field(default_factory=CallbackPolicy)
    """Where callbacks may go (by default only to public https hosts)."""
    _refusals_told: set[tuple[str, str]] = field(init=False, default_factory=set)

    async def approval_decided(self, approval: Approval, run: Run | None) -> None:
        if approval.callback_url and self._can_sign():
            self.background.spawn(self.deliver(approval), name=f"callback {approval.id}")

    async def redeliver(self, *, failed_too: bool = True) -> int:
        """Send the callbacks not delivered yet (left by a crash, or by a process without the
        secret); `failed_too` also retries those that failed every attempt before."""
        if not self._can_sign():
            return 0
        undelivered = await self.deliveries.undelivered_callbacks()
        chosen = [a for a in undelivered if failed_too or a.callback_status == Delivery.PENDING]
        await asyncio.gather(*(self.deliver(approval) for approval in chosen))
        return len(chosen)

    def _can_sign(self) -> bool:
        if not self.secret:
            log.warning(
                "no SIGNOFF_CALLBACK_SECRET (or legacy SIGNOFF_API_TOKEN): callbacks are not "
                "sent unsigned; they stay pending until a process with the secret runs"
            )
        return bool(self.secret)

    async def deliver(self, approval: Approval) -> bool:
        if approval.callback_url is None:
            return False
        try:
            await self.policy.check(approval.callback_url)
            return await self._send(approval, approval.callback_url)
        except CallbackRefused as exc:
            return await self._refused(approval, str(exc))

    async def _send(self, approval: Approval, url: str) -> bool:
        body = json.dumps(approval_view(approval)).encode()
        failure = ""
        connector = aiohttp.TCPConnector(resolver=CheckedResolver(self.policy))

        async def retrying_soon(state: RetryCallState) -> None:  # tenacity awaits a coroutine fn
            await self._attempted(
                approval, state.attempt_number, state.outcome, state.upcoming_sleep
            )

        timeout = aiohttp.ClientTimeout(total=self.timeout, sock_connect=min(self.timeout, 5.0))
        async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
            retrying = AsyncRetrying(
                retry=retry_if_result(lambda attempt: bool(attempt.failure)),
                stop=stop_after_attempt(self.attempts),
                wait=wait_exponential_jitter(
                    multiplier=self.first_delay, max=MAX_DELAY, jitter=self.first_delay
                ),
                retry_error_callback=_last_failure,
                before_sleep=retrying_soon,
            )
            last: Attempt = await retrying(self._post, session, url, body)
            attempts = retrying.statistics.get("attempt_number", 1)
            await self._attempted(approval, attempts, last, None)
            failure = last.failure
            if not failure:
                await self.deliveries.set_callback_status(approval.id, Delivery.DELIVERED)
                await self._history(approval, "callback_delivered", attempts=attempts)
                log.info(
                    "callback for approval %s (%s) delivered to %s (attempt %d)",
                    approval.id,
                    approval.state.value,
                    approval.callback_url,
                    retrying.statistics.get("attempt_number", 1),
                )
                return True
        if self.hand_over:
            log.warning(
                "callback for approval %s not delivered (%s); left to the server to deliver",
                approval.id,
                failure,
            )
            return False
        log.warning(
            "callback for approval %s to %s failed %d times (last: %s); "
            "signoff serve sends it again later",
            approval.id,
            approval.callback_url,
            self.attempts,
            failure,
        )
        CALLBACK_FAILURES.inc()
        await self.deliveries.set_callback_status(approval.id, Delivery.FAILED)
        await self._history(approval, "callback_failed", attempts=attempts, last=failure)
        return False

    async def _attempted(
        self, approval: Approval, number: int, outcome: object, retry_in: float | None
    ) -> None:
        """One attempt in the audit trail, as it ends: the delivery history."""
        attempt = _attempt_of(outcome)
        next_at = None if retry_in is None else (utcnow() + timedelta(seconds=retry_in))
        log.debug("callback for approval %s, attempt %d: %s", approval.id, number, attempt)
        await self._history(
            approval,
            "callback_attempt",
            attempt=number,
            status_code=attempt.status,
            error=attempt.failure or None,
            next_attempt_at=next_at and next_at.isoformat(),
        )

    async def _history(self, approval: Approval, action: str, **detail: object) -> None:
        """A delivery's attempt or outcome in the audit trail (`GET /v1/audit?approval_id=`;
        the attempts are `GET /v1/approvals/{id}/deliveries`)."""
        await self.deliveries.record_event(
            AuditEvent(
                action=action,
                actor="signoff",
                run_id=approval.run_id,
                approval_id=approval.id,
                detail={"url": approval.callback_url, "state": approval.state.value, **detail},
                at=utcnow(),
            )
        )

    async def _refused(self, approval: Approval, reason: str) -> bool:
        """Not sent, nor tried again until the next redelivery (the settings may change)."""
        told = (approval.id, reason)
        level = logging.DEBUG if told in self._refusals_told else logging.WARNING
        self._refusals_told.add(told)
        log.log(level, "callback for approval %s refused, not sent: %s", approval.id, reason)
        if not self.hand_over:
            CALLBACK_FAILURES.inc()
            await self.deliveries.set_callback_status(approval.id, Delivery.FAILED)
        return False

    async def _post(self, session: aiohttp.ClientSession, url: str, body: bytes) -> Attempt:
        """POST the signed body; what it came to."""
        timestamp = str(int(time.time()))
        headers = {
            "Content-Type": "application/json",
            "X-Signoff-Timestamp": timestamp,
            "X-Signoff-Signature": sign(self.secret, timestamp, body),
        }
        try:
            async with session.post(
                url, data=body, headers=headers, allow_redirects=False
            ) as response:
                ok = 200 <= response.status < 300
                return Attempt(response.status, "" if ok else f"HTTP {response.status}")
        except (aiohttp.ClientError, TimeoutError) as exc:
            return Attempt(None, repr(exc))


def _last_failure(state: RetryCallState) -> Attempt:
    """Out of attempts: the last attempt (instead of tenacity's RetryError)."""
    return _attempt_of(state.outcome)


def _attempt_of(outcome: object) -> Attempt:
    """The attempt a tenacity outcome (a future) or a plain result holds."""
    if isinstance(outcome, Attempt):
        return outcome
    result = getattr(outcome, "result", None)
    if result is None:
        return Attempt(None, "no attempt made")
    try:
        value = result()
    except Exception as exc:  # _post returns its failures; anything else is a bug to report
        return Attempt(None, repr(exc))
    return value if isinstance(value, Attempt) else Attempt(None, str(value))


class CheckedResolver(AbstractResolver):
    """Resolves through the callback policy: a host with any address the policy refuses
    raises `CallbackRefused` instead of connecting (aiohttp never resolves IP literals; the
    policy checks those before sending)."""

    def __init__(self, policy: CallbackPolicy) -> None:
        self.policy = policy

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_UNSPEC
    ) -> list[ResolveResult]:
        addresses = await self.policy.addresses(host.rstrip("."))
        return [
            ResolveResult(
                hostname=host,
                host=address,
                port=port,
                family=socket.AF_INET6 if ":" in address else socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
            for address in addresses
        ]

    async def close(self) -> None:
        return None
