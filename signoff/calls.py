"""The `/v1` calls, shared by `signoff.client`'s two clients: each builds a `Call` (method,
path, body, the model its answer parses into), a transport sends it; the retry settings;
how an answer becomes a model or an `ApiError`. Only the standard library and pydantic."""

from __future__ import annotations

import json
import os
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import Generic
from typing import Literal
from typing import TypeVar

from pydantic import BaseModel

from signoff.errors import ApiError
from signoff.errors import SignoffError
from signoff.errors import Unreachable
from signoff.models import Approval
from signoff.models import ApprovalList
from signoff.models import Run
from signoff.models import RunList

M = TypeVar("M", bound=BaseModel)
Decision = Literal["approved", "declined", "asked"]
RETRIED = frozenset({429, 502, 503, 504})
LONG_POLL = 25.0  # seconds one wait request may take on the server
DEFAULT_URL = "http://127.0.0.1:8000"


@dataclass(frozen=True)
class Call(Generic[M]):
    """One request and the model its answer parses into."""

    method: str
    path: str
    model: type[M]
    body: dict[str, Any] | None = None
    query: dict[str, Any] = field(default_factory=dict)
    read_timeout: float | None = None

    def url(self, base: str) -> str:
        chosen = {k: v for k, v in self.query.items() if v is not None}
        tail = f"?{urllib.parse.urlencode(chosen)}" if chosen else ""
        return f"{base}{self.path}{tail}"


@dataclass(frozen=True)
class Settings:
    url: str
    token: str
    timeout: float = 30.0
    retries: int = 4
    backoff: float = 0.25
    max_backoff: float = 8.0
    long_poll: float = LONG_POLL
    """Seconds one wait request lasts at most (1-60): also how often the server hears that
    someone still waits (its heartbeat)."""

    @classmethod
    def of(cls, url: str | None, token: str | None, **options: Any) -> Settings:
        chosen = token or os.environ.get("SIGNOFF_API_TOKEN")
        if not chosen:
            raise SignoffError("no API token: pass token= or set SIGNOFF_API_TOKEN")
        base = (url or os.environ.get("SIGNOFF_URL") or DEFAULT_URL).rstrip("/")
        return cls(base, chosen, **options)

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}

    def pause(self, attempt: int, retry_after: str | None) -> float:
        if retry_after and retry_after.isascii() and retry_after.isdigit():
            return min(float(retry_after), self.max_backoff * 4)
        return min(self.backoff * 2.0**attempt, self.max_backoff)


# the calls, shared by both clients


def request_call(
    tool: str,
    args: Mapping[str, Any],
    *,
    approval_id: str | None,
    policy: str | None,
    requested_by: str | None,
    sensitive: Sequence[str],
    callback_url: str | None,
    resume_state: str | None = None,
) -> Call[Approval]:
    body: dict[str, Any] = {
        "tool": tool,
        "args": dict(args),
        "approval_id": approval_id or f"ap_{uuid.uuid4().hex[:20]}",
    }
    optional = {
        "policy": policy,
        "requested_by": requested_by,
        "callback_url": callback_url,
        "resume_state": resume_state,
    }
    body |= {k: v for k, v in optional.items() if v is not None}
    if sensitive:
        body["sensitive"] = list(sensitive)
    return Call("POST", "/v1/approvals", Approval, body)


def get_call(approval_id: str) -> Call[Approval]:
    return Call("GET", f"/v1/approvals/{_segment(approval_id)}", Approval)


def wait_call(approval_id: str, seconds: float) -> Call[Approval]:
    query = {"timeout": f"{seconds:.3f}"}
    path = f"/v1/approvals/{_segment(approval_id)}/wait"
    return Call("GET", path, Approval, query=query, read_timeout=seconds + 15)


def decide_call(
    approval_id: str,
    decision: Decision,
    *,
    by: str,
    reason: str | None,
    args: Mapping[str, Any] | None,
) -> Call[Approval]:
    body: dict[str, Any] = {"decision": decision, "by": by}
    if reason is not None:
        body["reason"] = reason
    if args is not None:
        body["args"] = dict(args)
    return Call("POST", f"/v1/approvals/{_segment(approval_id)}/decision", Approval, body)


def withdraw_call(approval_id: str, *, read_timeout: float | None = None) -> Call[Approval]:
    path = f"/v1/approvals/{_segment(approval_id)}/withdraw"
    return Call("POST", path, Approval, read_timeout=read_timeout)


def list_call(
    state: str | None, run_id: str | None, tool: str | None, cursor: str | None, limit: int
) -> Call[ApprovalList]:
    query = {"state": state, "run_id": run_id, "tool": tool, "cursor": cursor, "limit": limit}
    return Call("GET", "/v1/approvals", ApprovalList, query=query)


def start_call(agent: str, task: str, *, run_id: str | None, requested_by: str | None) -> Call[Run]:
    body = {"agent": agent, "task": task, "run_id": run_id or f"run_{uuid.uuid4().hex[:20]}"}
    if requested_by is not None:
        body["requested_by"] = requested_by
    return Call("POST", "/v1/runs", Run, body)


def run_call(run_id: str) -> Call[Run]:
    return Call("GET", f"/v1/runs/{_segment(run_id)}", Run)


def runs_call(status: str | None, cursor: str | None, limit: int) -> Call[RunList]:
    query = {"status": status, "cursor": cursor, "limit": limit}
    return Call("GET", "/v1/runs", RunList, query=query)


def cancel_call(run_id: str, reason: str, compensate: bool = False) -> Call[Run]:
    body: dict[str, object] = {"reason": reason} | ({"compensate": True} if compensate else {})
    return Call("POST", f"/v1/runs/{_segment(run_id)}/cancel", Run, body)


def _segment(text: str) -> str:
    return urllib.parse.quote(text, safe="")


def parse(call: Call[M], status: int, text: str) -> M:
    try:
        data = json.loads(text) if text else {}
    except json.JSONDecodeError:
        raise ApiError(status, f"not JSON: {text[:200]!r}") from None
    if status >= 400:
        body = data if isinstance(data, dict) else {}
        raise ApiError(status, str(body.get("error", text[:200])), body)
    return call.model.model_validate(data)


def spans(timeout: float | None, longest: float) -> Iterator[float]:
    """The seconds each request of a wait may last: `longest`, the last one cut short where
    `timeout` ends (None: on until decided). Each is reckoned when the one before returned."""
    until = None if timeout is None else time.monotonic() + timeout
    while (left := longest if until is None else min(longest, until - time.monotonic())) > 0:
        yield left


Sent = tuple[int, str, str | None]
"""What a transport got back for one attempt: the status, the body, `Retry-After`."""


def attempted(call: Call[M], settings: Settings, attempt: int, sent: Sent | OSError) -> M | float:
    """What one attempt at `call` (`sent`: its answer, or the connection's failure) comes to:
    the parsed answer, or the seconds to pause before the next attempt (a connection failure,
    429, 502-504, while attempts are left). The last attempt's failure to connect raises
    `Unreachable`."""
    last = attempt == settings.retries
    if isinstance(sent, OSError):
        if last:
            raise Unreachable(f"{call.method} {call.path}: {sent}") from sent
        return settings.pause(attempt, None)
    status, text, retry_after = sent
    if status in RETRIED and not last:
        return settings.pause(attempt, retry_after)
    return parse(call, status, text)


def decided_first(exc: ApiError) -> Approval:
    """A withdrawal refused because the approval was decided first (409 with it as decided):
    that decision is the answer. Any other refusal is raised."""
    decided = exc.body.get("approval")
    if exc.status == 409 and isinstance(decided, dict):
        return Approval.model_validate(decided)
    raise exc


def same_decision(exc: ApiError, decision: Decision, by: str) -> Approval:
    """A decision retried after its answer was lost finds itself recorded (409 with the
    approval as decided): that is the answer, not an error. Any other refusal is raised."""
    decided = exc.body.get("approval")
    if exc.status == 409 and isinstance(decided, dict):
        approval = Approval.model_validate(decided)
        if (approval.state, approval.decided_by) == (decision, by):
            return approval
    raise exc
