"""What the adapter tests share: a Signoff client on the test's API, and a human who decides
each approval as it shows up (from the server's side, like Slack would)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from collections.abc import Callable
from typing import Any

from signoff import AsyncClient
from signoff.models import Approval as WireApproval
from store import Approval

from .helpers import TOKEN
from .helpers import Api

Decide = Callable[[Approval], tuple[str, dict[str, Any]]]


def client_of(api: Api) -> AsyncClient:
    return AsyncClient(str(api.client.make_url("")).rstrip("/"), TOKEN)


@contextlib.asynccontextmanager
async def human(api: Api, decide: Decide) -> AsyncIterator[list[Approval]]:
    """Decides every pending approval with `decide(approval) -> (decision, options)`;
    yields the approvals it decided, in order."""
    seen: list[Approval] = []

    async def watch() -> None:
        while True:
            for approval in await api.rt.approvals(state="pending"):
                decision, how = decide(approval)
                await api.rt.decide(approval.id, decision, by="U0BOSS", **how)  # type: ignore[arg-type]
                seen.append(approval)
            await asyncio.sleep(0.05)

    task = asyncio.create_task(watch())
    try:
        yield seen
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def approve(approval: Approval) -> tuple[str, dict[str, Any]]:
    return "approved", {}


def decline(reason: str) -> Decide:
    return lambda approval: ("declined", {"reason": reason})


def approve_with(**changes: Any) -> Decide:
    return lambda approval: ("approved", {"args": approval.args | changes})


__all__ = ["WireApproval", "approve", "approve_with", "client_of", "decline", "human"]
