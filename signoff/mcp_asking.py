"""How the MCP proxy asks Signoff about one call, waits for the answer, and lets the approval
go when its caller leaves.

- One call, one live approval. Its id is fixed by the call (`mcp_<key>`, the key of
  `signoff.mcp_ledger`), so the same call asked again, after a restart too, finds it and its
  decision. A withdrawn one (its caller left) is no one's answer: the call asked again is
  asked anew, under the next id (`mcp_<key>-2`, `-3`, ...).
- A client of the revisions with a session (up to 2025-11-25) waits in its `tools/call`
  until the decision or `--timeout`; each of the proxy's long polls is the heartbeat that
  tells Signoff someone waits. Cancelled (the client cancelled the call, closed the pipe, or
  dropped its HTTP stream), the wait withdraws the approval first, shielded from the
  cancellation, so the card says the agent stopped waiting.
- A client of the stateless revision (2026-07-28) waits one round (`round_seconds`) per
  `tools/call`: still pending, the answer is `input_required`, its `requestState` naming the
  approval (`state_of`), and the client calls again carrying it. A retry whose state names
  another call's approval is refused (`StateRefused`): the state is the client's to echo, not
  to choose. Between rounds nobody waits in the proxy; a client that stops retrying lets the
  heartbeat lapse.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC
from datetime import datetime
from typing import Any

import anyio

from signoff.client import AsyncClient
from signoff.errors import SignoffError
from signoff.leaving import LEAVE_TIMEOUT
from signoff.models import Approval

log = logging.getLogger("signoff.mcp")
MAX_ASKS = 100
"""Times one call may be asked anew after withdrawals (then it is refused)."""
STATE_KEY = "signoff_approval"


class StateRefused(SignoffError):
    """A retry's `requestState` does not name an approval of this call."""


def approval_ids(key: str) -> Iterator[str]:
    """The ids a call's approvals take, in order: the first, then one per withdrawal."""
    first = f"mcp_{key[:24]}"
    yield first
    for n in range(2, MAX_ASKS + 1):
        yield f"{first}-{n}"


def state_of(approval: Approval) -> str:
    """The `requestState` a stateless client carries into its retry: the approval's id."""
    return json.dumps({STATE_KEY: approval.id}, separators=(",", ":"))


def carried(state: str, key: str) -> str:
    """The approval id a retry's `requestState` carries, if it is one of this call's."""
    try:
        approval_id = json.loads(state)[STATE_KEY]
    except (ValueError, TypeError, KeyError):
        raise StateRefused("its requestState was not made by this proxy") from None
    if approval_id not in set(approval_ids(key)):
        raise StateRefused("its requestState names the approval of another call")
    return str(approval_id)


@dataclass
class Asking:
    signoff: AsyncClient
    requested_by: str | None = None
    timeout: float = 3600.0
    """Seconds a call waits for a decision in all, before it is refused as not decided."""
    round_seconds: float = 25.0
    """Seconds one stateless round waits before it answers `input_required`."""

    async def until_decided(
        self, key: str, name: str, args: dict[str, Any], policy: str | None
    ) -> Approval:
        """The call's approval once decided, or still pending after `timeout` seconds."""
        approval = await self.ask(key, name, args, policy)
        return approval if approval.decided else await self._wait(approval, self.timeout)

    async def one_round(
        self, key: str, name: str, args: dict[str, Any], policy: str | None, state: str | None
    ) -> Approval:
        """The call's approval after one stateless round: decided, or still pending."""
        approval = None
        if state is not None:
            approval = await self.signoff.get(carried(state, key))
        if approval is None or approval.withdrawn:
            approval = await self.ask(key, name, args, policy)
        left = self.timeout - waited(approval)
        if approval.decided or left <= 0:
            return approval
        return await self._wait(approval, min(self.round_seconds, left))

    def out_of_time(self, approval: Approval) -> bool:
        return waited(approval) >= self.timeout

    async def ask(self, key: str, name: str, args: dict[str, Any], policy: str | None) -> Approval:
        """The call's live approval: the first of its ids not withdrawn (asked if new)."""
        for approval_id in approval_ids(key):
            asked = await self.signoff.request(
                name, args, approval_id=approval_id, policy=policy, requested_by=self.requested_by
            )
            if not asked.withdrawn:
                return asked
        raise SignoffError(f"{name} was asked {MAX_ASKS} times and withdrawn each time")

    async def _wait(self, approval: Approval, seconds: float) -> Approval:
        """Wait up to `seconds`; cancelled (the caller left), withdraw the approval first."""
        try:
            return await self.signoff.wait(approval.id, timeout=seconds, withdraw_on_cancel=False)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True), anyio.move_on_after(LEAVE_TIMEOUT):
                await self._withdraw(approval.id)
            raise

    async def _withdraw(self, approval_id: str) -> None:
        try:
            withdrawn = await self.signoff.withdraw(approval_id)
        except SignoffError as exc:  # its heartbeat lapsing will say nobody waits
            log.warning("approval %s: the caller left; could not withdraw it: %s", approval_id, exc)
            return
        log.info(
            "approval %s: the caller left; %s", approval_id, withdrawn.reason or withdrawn.state
        )


def waited(approval: Approval) -> float:
    """Seconds since the approval was asked (by this machine's clock)."""
    return (datetime.now(UTC) - approval.created_at).total_seconds()
