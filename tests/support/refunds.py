"""Runs of the example refund agent (`examples/refund_agent.py`), parked on their approval."""

from __future__ import annotations

from runtime import Runtime
from store import Approval


async def park_refund(
    rt: Runtime, order: str, *, requested_by: str = "U0REQ"
) -> tuple[str, Approval]:
    """Start the refund of `order`: the run, and the one approval its refund waits on."""
    run_id = await rt.start("refund-agent", f"Refund order {order}", requested_by=requested_by)
    [approval] = await rt.approvals(run_id)
    return run_id, approval
