"""The `/v1` API from Python, async (`AsyncClient`, over aiohttp) and sync (`Client`, over the
standard library), with one set of calls: each builds a `Call`, a transport sends it.

- Retries are idempotent: a request for approval always carries an id (chosen here when
  the caller gives none), so a retry after a lost answer finds the approval it made instead
  of asking the humans twice; connection failures, 429 (after `Retry-After`), 502, 503 and
  504 are retried with capped exponential backoff, and so is nothing else.
- `wait` long-polls `GET /v1/approvals/{id}/wait`: the server answers when the decision
  lands, so the client never polls on a timer.

The server's URL and token come from the arguments, else `SIGNOFF_URL` and
`SIGNOFF_API_TOKEN`. Importing this module imports neither the server nor aiohttp.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

from signoff.calls import (
    LONG_POLL,
    RETRIED,
    Call,
    Decision,
    M,
    Settings,
    cancel_call,
    decide_call,
    get_call,
    list_call,
    parse,
    request_call,
    run_call,
    runs_call,
    same_decision,
    start_call,
    wait_call,
)
from signoff.errors import ApiError, Unreachable
from signoff.models import Approval, ApprovalList, Run, RunList
from signoff.stream import MAX_STREAM, until_decided


class AsyncClient:
    """`async with AsyncClient(url, token) as signoff: ...`"""

    def __init__(self, url: str | None = None, token: str | None = None, **options: Any):
        self.settings = Settings.of(url, token, **options)
        self._session: Any = None

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def request(
        self,
        tool: str,
        args: Mapping[str, Any],
        *,
        approval_id: str | None = None,
        policy: str | None = None,
        requested_by: str | None = None,
        sensitive: Sequence[str] = (),
        callback_url: str | None = None,
        resume_state: str | None = None,
    ) -> Approval:
        """Ask for an approval; with the same `approval_id`, the same request asks once."""
        call = request_call(
            tool,
            args,
            approval_id=approval_id,
            policy=policy,
            requested_by=requested_by,
            sensitive=sensitive,
            callback_url=callback_url,
            resume_state=resume_state,
        )
        return await self.send(call)

    async def get(self, approval_id: str) -> Approval:
        return await self.send(get_call(approval_id))

    # `timeout` is how long the server may keep it pending, not a cancellation: no ASYNC109.
    async def wait(
        self,
        approval_id: str,
        *,
        timeout: float | None = None,  # noqa: ASYNC109
        stream: bool = False,
    ) -> Approval:
        """The approval once decided, or still pending once `timeout` seconds passed (None:
        until it is decided). `stream`: listen on its server-sent event stream instead of
        long-polling (a stream that breaks is listened to again)."""
        until = None if timeout is None else time.monotonic() + timeout
        longest = MAX_STREAM if stream else LONG_POLL
        while True:
            left = longest if until is None else min(longest, until - time.monotonic())
            if left <= 0:
                return await self.get(approval_id)
            approval = await (
                self._streamed(approval_id, left)
                if stream
                else self.send(wait_call(approval_id, left))
            )
            if approval.decided:
                return approval

    async def _streamed(self, approval_id: str, seconds: float) -> Approval:
        import aiohttp

        try:
            return await until_decided(self._open(), self.settings, approval_id, seconds)
        except (aiohttp.ClientError, TimeoutError, OSError):
            await asyncio.sleep(self.settings.pause(0, None))
            return await self.get(approval_id)

    async def decide(
        self,
        approval_id: str,
        decision: Decision,
        *,
        by: str,
        reason: str | None = None,
        args: Mapping[str, Any] | None = None,
    ) -> Approval:
        call = decide_call(approval_id, decision, by=by, reason=reason, args=args)
        try:
            return await self.send(call)
        except ApiError as exc:
            return same_decision(exc, decision, by)

    async def approvals(
        self,
        *,
        state: str | None = None,
        run_id: str | None = None,
        tool: str | None = None,
        cursor: str | None = None,
        limit: int = 100,
    ) -> ApprovalList:
        return await self.send(list_call(state, run_id, tool, cursor, limit))

    async def start_run(
        self, agent: str, task: str, *, run_id: str | None = None, requested_by: str | None = None
    ) -> Run:
        return await self.send(start_call(agent, task, run_id=run_id, requested_by=requested_by))

    async def get_run(self, run_id: str) -> Run:
        return await self.send(run_call(run_id))

    async def runs(
        self, *, status: str | None = None, cursor: str | None = None, limit: int = 100
    ) -> RunList:
        return await self.send(runs_call(status, cursor, limit))

    async def cancel(self, run_id: str, *, reason: str = "", compensate: bool = False) -> Run:
        """Stop a run for good; a cancel retried after its answer was lost finds it done.
        `compensate`: a reversible tool still running is undone once it ends."""
        try:
            return await self.send(cancel_call(run_id, reason, compensate))
        except ApiError as exc:
            if exc.status == 409 and (run := await self.get_run(run_id)).status == "cancelled":
                return run
            raise

    async def send(self, call: Call[M]) -> M:
        """Send with retries (connection failures, 429, 502-504) and parse the answer."""
        settings = self.settings
        for attempt in range(settings.retries + 1):
            last = attempt == settings.retries
            try:
                status, text, retry_after = await self._once(call)
            except (OSError, TimeoutError) as exc:
                if last:
                    raise Unreachable(f"{call.method} {call.path}: {exc}") from exc
                await asyncio.sleep(settings.pause(attempt, None))
                continue
            if status in RETRIED and not last:
                await asyncio.sleep(settings.pause(attempt, retry_after))
                continue
            return parse(call, status, text)
        raise AssertionError("unreachable")  # the last attempt returned or raised

    def _open(self) -> Any:
        import aiohttp  # only async users need it

        if self._session is None:
            self._session = aiohttp.ClientSession(headers=self.settings.headers())
        return self._session

    async def _once(self, call: Call[Any]) -> tuple[int, str, str | None]:
        import aiohttp  # only async users need it

        timeout = aiohttp.ClientTimeout(
            total=None,
            sock_connect=self.settings.timeout,
            sock_read=call.read_timeout or self.settings.timeout,
        )
        try:
            async with self._open().request(
                call.method, call.url(self.settings.url), json=call.body, timeout=timeout
            ) as response:
                return response.status, await response.text(), response.headers.get("Retry-After")
        except aiohttp.ClientError as exc:
            raise OSError(str(exc)) from exc


class Client:
    """The same calls, blocking: `Client(url, token).request(...)`."""

    def __init__(self, url: str | None = None, token: str | None = None, **options: Any):
        self.settings = Settings.of(url, token, **options)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Nothing is held between requests; here for symmetry with `AsyncClient`."""

    def request(
        self,
        tool: str,
        args: Mapping[str, Any],
        *,
        approval_id: str | None = None,
        policy: str | None = None,
        requested_by: str | None = None,
        sensitive: Sequence[str] = (),
        callback_url: str | None = None,
        resume_state: str | None = None,
    ) -> Approval:
        """Ask for an approval; with the same `approval_id`, the same request asks once."""
        call = request_call(
            tool,
            args,
            approval_id=approval_id,
            policy=policy,
            requested_by=requested_by,
            sensitive=sensitive,
            callback_url=callback_url,
            resume_state=resume_state,
        )
        return self.send(call)

    def get(self, approval_id: str) -> Approval:
        return self.send(get_call(approval_id))

    def wait(self, approval_id: str, *, timeout: float | None = None) -> Approval:
        """The approval once decided, or still pending once `timeout` seconds passed."""
        until = None if timeout is None else time.monotonic() + timeout
        while True:
            left = LONG_POLL if until is None else min(LONG_POLL, until - time.monotonic())
            if left <= 0:
                return self.get(approval_id)
            approval = self.send(wait_call(approval_id, left))
            if approval.decided:
                return approval

    def decide(
        self,
        approval_id: str,
        decision: Decision,
        *,
        by: str,
        reason: str | None = None,
        args: Mapping[str, Any] | None = None,
    ) -> Approval:
        call = decide_call(approval_id, decision, by=by, reason=reason, args=args)
        try:
            return self.send(call)
        except ApiError as exc:
            return same_decision(exc, decision, by)

    def approvals(
        self,
        *,
        state: str | None = None,
        run_id: str | None = None,
        tool: str | None = None,
        cursor: str | None = None,
        limit: int = 100,
    ) -> ApprovalList:
        return self.send(list_call(state, run_id, tool, cursor, limit))

    def start_run(
        self, agent: str, task: str, *, run_id: str | None = None, requested_by: str | None = None
    ) -> Run:
        return self.send(start_call(agent, task, run_id=run_id, requested_by=requested_by))

    def get_run(self, run_id: str) -> Run:
        return self.send(run_call(run_id))

    def runs(
        self, *, status: str | None = None, cursor: str | None = None, limit: int = 100
    ) -> RunList:
        return self.send(runs_call(status, cursor, limit))

    def cancel(self, run_id: str, *, reason: str = "", compensate: bool = False) -> Run:
        """Stop a run for good; a cancel retried after its answer was lost finds it done.
        `compensate`: a reversible tool still running is undone once it ends."""
        try:
            return self.send(cancel_call(run_id, reason, compensate))
        except ApiError as exc:
            if exc.status == 409 and (run := self.get_run(run_id)).status == "cancelled":
                return run
            raise

    def send(self, call: Call[M]) -> M:
        settings = self.settings
        for attempt in range(settings.retries + 1):
            last = attempt == settings.retries
            try:
                status, text, retry_after = self._once(call)
            except OSError as exc:
                if last:
                    raise Unreachable(f"{call.method} {call.path}: {exc}") from exc
                time.sleep(settings.pause(attempt, None))
                continue
            if status in RETRIED and not last:
                time.sleep(settings.pause(attempt, retry_after))
                continue
            return parse(call, status, text)
        raise AssertionError("unreachable")

    def _once(self, call: Call[Any]) -> tuple[int, str, str | None]:
        data = None if call.body is None else json.dumps(call.body).encode()
        headers = self.settings.headers()
        if data is not None:
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(
            call.url(self.settings.url), data=data, headers=headers, method=call.method
        )
        timeout = call.read_timeout or self.settings.timeout
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, response.read().decode(), None
        except urllib.error.HTTPError as exc:
            with exc:
                return exc.code, exc.read().decode(), exc.headers.get("Retry-After")
