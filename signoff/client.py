"""The `/v1` API from Python, async (`AsyncClient`, over aiohttp, here) and sync (`Client`, over
the standard library, in `signoff.blocking`), with one set of calls: each builds a `Call`, a
transport sends it.

- Retries are idempotent: a request for approval always carries an id (chosen here when
  the caller gives none), so a retry after a lost answer finds the approval it made instead
  of asking the humans twice; connection failures, 429 (after `Retry-After`), 502, 503 and
  504 are retried with capped exponential backoff, and so is nothing else.
- `wait` long-polls `GET /v1/approvals/{id}/wait`: the server answers when the decision
  lands, so the client never polls on a timer; each long poll is also the heartbeat that
  tells the server someone waits for the answer.
- A caller that leaves is let go: a request, or a wait on an approval this client asked
  for, that is cancelled (asyncio's `cancel`; Ctrl-C in `Client`) withdraws the approval
  first (`signoff.leaving`), and `withdraw` does it on purpose.

The server's URL and token come from the arguments, else `SIGNOFF_URL` and
`SIGNOFF_API_TOKEN`. Importing this module imports neither the server nor aiohttp.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from signoff.blocking import Client
from signoff.calls import Call
from signoff.calls import Decision
from signoff.calls import M
from signoff.calls import Sent
from signoff.calls import Settings
from signoff.calls import attempted
from signoff.calls import cancel_call
from signoff.calls import decide_call
from signoff.calls import decided_first
from signoff.calls import get_call
from signoff.calls import list_call
from signoff.calls import parse
from signoff.calls import request_call
from signoff.calls import run_call
from signoff.calls import runs_call
from signoff.calls import same_decision
from signoff.calls import spans
from signoff.calls import start_call
from signoff.calls import wait_call
from signoff.calls import withdraw_call
from signoff.errors import ApiError
from signoff.errors import SignoffError
from signoff.leaving import LEAVE_TIMEOUT
from signoff.leaving import Asked
from signoff.leaving import leave_call
from signoff.leaving import not_withdrawn
from signoff.leaving import withdrawn
from signoff.models import Approval
from signoff.models import ApprovalList
from signoff.models import Run
from signoff.models import RunList
from signoff.stream import MAX_STREAM
from signoff.stream import until_decided

__all__ = ["AsyncClient", "Client"]  # `Client`, the blocking twin, lives in signoff.blocking


class AsyncClient:
    """`async with AsyncClient(url, token) as signoff: ...`"""

    def __init__(self, url: str | None = None, token: str | None = None, **options: Any):
        self.settings = Settings.of(url, token, **options)
        self._session: Any = None
        self._asked = Asked()
        self._leaving: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._leaving:  # withdrawals of callers that left go out first
            await asyncio.wait(self._leaving, timeout=LEAVE_TIMEOUT)
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
        """Ask for an approval; with the same `approval_id`, the same request asks once.
        Cancelled on its way, it is withdrawn (it may have been asked)."""
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
        asking = str((call.body or {})["approval_id"])
        try:
            approval = await self.send(call)
        except asyncio.CancelledError:
            await self._leave(asking)
            raise
        if not approval.decided:
            self._asked.add(approval.id)
        return approval

    async def get(self, approval_id: str) -> Approval:
        return await self.send(get_call(approval_id))

    async def withdraw(self, approval_id: str) -> Approval:
        """Take back an approval this client's token asked for: nobody waits for its answer
        any more (its card says so; a decision after it changes nothing). Withdrawing again
        answers the same; decided first, the decision is the answer."""
        try:
            approval = await self.send(withdraw_call(approval_id))
        except ApiError as exc:
            approval = decided_first(exc)
        self._asked.discard(approval_id)
        return approval

    # `timeout` is how long the server may keep it pending, not a cancellation: no ASYNC109.
    async def wait(
        self,
        approval_id: str,
        *,
        timeout: float | None = None,  # noqa: ASYNC109
        stream: bool = False,
        withdraw_on_cancel: bool | None = None,
    ) -> Approval:
        """The approval once decided, or still pending once `timeout` seconds passed (None:
        until it is decided). `stream`: listen on its server-sent event stream instead of
        long-polling (a stream that breaks is listened to again). Cancelled, it withdraws
        the approval first if this client asked for it (`withdraw_on_cancel` None), always
        (True) or never (False)."""
        leave = approval_id in self._asked if withdraw_on_cancel is None else withdraw_on_cancel
        try:
            approval = await self._wait(approval_id, timeout, stream)
        except asyncio.CancelledError:
            if leave:
                await self._leave(approval_id)
            raise
        if approval.decided:
            self._asked.discard(approval_id)
        return approval

    async def _wait(self, approval_id: str, timeout: float | None, stream: bool) -> Approval:  # noqa: ASYNC109
        for left in spans(timeout, MAX_STREAM if stream else self.settings.long_poll):
            approval = await (
                self._streamed(approval_id, left)
                if stream
                else self.send(wait_call(approval_id, left))
            )
            if approval.decided:
                return approval
        return await self.get(approval_id)

    async def _leave(self, approval_id: str) -> None:
        """Withdraw for a caller that left, once, shielded from a second cancellation (the
        withdrawal then goes on by itself; `close` waits for it)."""
        self._asked.discard(approval_id)
        task = asyncio.ensure_future(self._withdraw_once(approval_id))
        self._leaving.add(task)
        task.add_done_callback(self._leaving.discard)
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(task)

    async def _withdraw_once(self, approval_id: str) -> None:
        call = leave_call(approval_id)
        try:
            async with asyncio.timeout(LEAVE_TIMEOUT):
                status, text, _ = await self._once(call)
            withdrawn(parse(call, status, text))
        except (SignoffError, OSError, TimeoutError) as exc:
            not_withdrawn(approval_id, exc)

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
        for attempt in range(self.settings.retries + 1):
            try:
                sent: Sent | OSError = await self._once(call)
            except OSError as exc:  # TimeoutError too
                sent = exc
            answer = attempted(call, self.settings, attempt, sent)
            if isinstance(answer, BaseModel):
                return answer
            await asyncio.sleep(answer)
        raise AssertionError("unreachable")  # the last attempt returned or raised

    def _open(self) -> Any:
        import aiohttp  # only async users need it

        if self._session is None:
            self._session = aiohttp.ClientSession(headers=self.settings.headers())
        return self._session

    async def _once(self, call: Call[Any]) -> Sent:
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
