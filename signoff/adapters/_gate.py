"""What every adapter does with one paused call: ask for it under an id fixed by the call (so
asking again, from any process, finds the same approval and its decision) and wait."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from typing import Literal

from signoff.client import AsyncClient
from signoff.errors import TimedOut
from signoff.models import Approval

OnTimeout = Literal["deny", "raise"]
_SAFE = re.compile(r"[A-Za-z0-9_.:\-]{1,100}")


def approval_id_for(prefix: str, *parts: str) -> str:
    """An approval id from what names the call (a thread and a call id): readable when the
    parts are plain, else their digest; always within the API's id pattern."""
    joined = ":".join(parts)
    candidate = f"{prefix}_{joined}"
    if _SAFE.fullmatch(candidate):
        return candidate
    return f"{prefix}_{hashlib.sha256(joined.encode()).hexdigest()[:32]}"


@dataclass(frozen=True)
class Gate:
    """How an adapter asks: the client, the policy, who asks, how long to wait."""

    client: AsyncClient
    policy: str | None = None
    requested_by: str | None = None
    timeout: float = 3600.0
    on_timeout: OnTimeout = "deny"

    async def ask(
        self,
        approval_id: str,
        tool: str,
        args: Mapping[str, Any],
        *,
        resume_state: str | None = None,
    ) -> Approval:
        """Ask (once per id), not waiting; `resume_state` is kept with a new approval."""
        return await self.client.request(
            tool,
            args,
            approval_id=approval_id,
            policy=self.policy,
            requested_by=self.requested_by,
            resume_state=resume_state,
        )

    async def decide(
        self,
        approval_id: str,
        tool: str,
        args: Mapping[str, Any],
        *,
        resume_state: str | None = None,
    ) -> Approval:
        """The decided approval; still pending after `timeout`: `TimedOut` with
        `on_timeout="raise"`, else the pending approval (which every adapter denies)."""
        asked = await self.ask(approval_id, tool, args, resume_state=resume_state)
        decided = asked if asked.decided else await self.client.wait(asked.id, timeout=self.timeout)
        if not decided.decided and self.on_timeout == "raise":
            raise TimedOut(decided, self.timeout)
        return decided


def denial(approval: Approval) -> str:
    """What the model is told about a call that will not run."""
    if approval.state == "pending":
        return (
            f"Not executed: nobody approved {approval.tool} in time (approval {approval.id}). "
            "Do not retry it."
        )
    who = approval.decided_by or "Signoff"
    return f"Not executed: {who} declined {approval.tool}: {approval.reason or 'no reason'}."


def edited(approval: Approval) -> bool:
    return approval.approved_args is not None and approval.approved_args != approval.args
