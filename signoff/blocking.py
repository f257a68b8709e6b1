"""The blocking client, `Client`: the same `/v1` calls as `signoff.client.AsyncClient`, sent
over the standard library (`urllib`), with the same retries and the same handling of a
caller that leaves (here: Ctrl-C, `KeyboardInterrupt`, during a request or a wait on an
approval it asked for withdraws it first). Import it from `signoff`.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

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
from signoff.leaving import Asked
from signoff.leaving import leave_call
from signoff.leaving import not_withdrawn
from signoff.leaving import withdrawn
from signoff.models import Approval
from signoff.models import ApprovalList
from signoff.models import Run
from signoff.models import RunList


class Client:
    """The same calls, blocking: `Client(url, token).request(...)`."""

    def __init__(self, url: str | None = None, token: str | None = None, **options: Any):
        self.settings = Settings.of(url, token, **options)
        self._asked = Asked()

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
        """Ask for an approval; with the same `approval_id`, the same request asks once.
        Interrupted on its way (Ctrl-C), it is withdrawn (it may have been asked)."""
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
            approval = self.send(call)
        except KeyboardInterrupt:
            self._leave(asking)
            raise
        if not approval.decided:
            self._asked.add(approval.id)
        return approval

    def get(self, approval_id: str) -> Approval:
        return self.send(get_call(approval_id))

    def withdraw(self, approval_id: str) -> Approval:
        """Take back an approval this client's token asked for (as `AsyncClient.withdraw`)."""
        try:
            approval = self.send(withdraw_call(approval_id))
        except ApiError as exc:
            approval = decided_first(exc)
        self._asked.discard(approval_id)
        return approval

    def wait(
        self,
        approval_id: str,
        *,
        timeout: float | None = None,
        withdraw_on_cancel: bool | None = None,
    ) -> Approval:
        """The approval once decided, or still pending once `timeout` seconds passed.
        Interrupted (Ctrl-C), it withdraws the approval first as `AsyncClient.wait` does."""
        leave = approval_id in self._asked if withdraw_on_cancel is None else withdraw_on_cancel
        try:
            approval = self._wait(approval_id, timeout)
        except KeyboardInterrupt:
            if leave:
                self._leave(approval_id)
            raise
        if approval.decided:
            self._asked.discard(approval_id)
        return approval

    def _leave(self, approval_id: str) -> None:
        self._asked.discard(approval_id)
        call = leave_call(approval_id)
        try:
            status, text, _ = self._once(call)
            withdrawn(parse(call, status, text))
        except (SignoffError, OSError) as exc:
            not_withdrawn(approval_id, exc)

    def _wait(self, approval_id: str, timeout: float | None) -> Approval:
        for left in spans(timeout, self.settings.long_poll):
            approval = self.send(wait_call(approval_id, left))
            if approval.decided:
                return approval
        return self.get(approval_id)

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
        for attempt in range(self.settings.retries + 1):
            try:
                sent: Sent | OSError = self._once(call)
            except OSError as exc:
                sent = exc
            answer = attempted(call, self.settings, attempt, sent)
            if isinstance(answer, BaseModel):
                return answer
            time.sleep(answer)
        raise AssertionError("unreachable")  # the last attempt returned or raised

    def _once(self, call: Call[Any]) -> Sent:
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
