"""When a caller leaves mid-wait, the client takes back what it asked: the approvals a
client asked for and has not seen decided are remembered (`Asked`), and a request or a wait
on one of them that is cancelled (asyncio's `cancel`, Ctrl-C in the blocking client) first
withdraws it (`POST /v1/approvals/{id}/withdraw`), so its card says the agent stopped waiting
instead of waiting for a human whose answer nobody would act on. That withdrawal is one try
within `LEAVE_TIMEOUT` and never raises: a caller killed outright cannot send it, and its
wait's heartbeat lapsing says as much on the server.
"""

from __future__ import annotations

import logging

from signoff.calls import Call
from signoff.calls import withdraw_call
from signoff.errors import ApiError
from signoff.errors import SignoffError
from signoff.models import Approval

LEAVE_TIMEOUT = 5.0
"""Seconds a caller that left waits at most for its withdrawal to be answered."""
REMEMBERED = 10_000
"""Approvals a client remembers asking for, at most (the oldest are forgotten first)."""
log = logging.getLogger("signoff.client")


class Asked:
    """The approvals this client asked for that it has not seen decided, newest last."""

    def __init__(self, most: int = REMEMBERED) -> None:
        self.most = most
        self._ids: dict[str, None] = {}

    def add(self, approval_id: str) -> None:
        self._ids.pop(approval_id, None)
        self._ids[approval_id] = None
        while len(self._ids) > self.most:
            del self._ids[next(iter(self._ids))]

    def discard(self, approval_id: str) -> None:
        self._ids.pop(approval_id, None)

    def __contains__(self, approval_id: object) -> bool:
        return approval_id in self._ids


def leave_call(approval_id: str) -> Call[Approval]:
    """The withdrawal of a caller that left: answered within `LEAVE_TIMEOUT`, or given up."""
    return withdraw_call(approval_id, read_timeout=LEAVE_TIMEOUT)


def withdrawn(approval: Approval) -> None:
    log.info("approval %s: its caller left, so it was withdrawn", approval.id)


def not_withdrawn(approval_id: str, exc: SignoffError | OSError | TimeoutError) -> None:
    """Say why a leaving caller's approval was not withdrawn: gone or decided already (no
    matter), or Signoff could not be told (its heartbeat lapsing will say nobody waits)."""
    if isinstance(exc, ApiError) and exc.status in (404, 409):
        log.info("approval %s: its caller left; nothing to withdraw (%s)", approval_id, exc)
    else:
        log.warning("approval %s: its caller left; could not withdraw it: %s", approval_id, exc)
