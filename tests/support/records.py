"""Store records built for unit tests that need one but care only about a few of its fields."""

from __future__ import annotations

from typing import Any

from store import Checkpoint
from store import Effect
from store import Message
from store import RunStatus


def an_effect(**fields: Any) -> Effect:
    """An effect of run "r" (its own lineage) at step 1, keyed "k", with `fields` set."""
    defaults: dict[str, Any] = {
        "run_id": "r",
        "call_id": "c",
        "lineage_id": "r",
        "step": 1,
        "idempotency_key": "k",
    }
    return Effect(**(defaults | fields))


def a_checkpoint(
    seq: int, step: int, status: RunStatus, *messages: Message, run_id: str = "r", **fields: Any
) -> Checkpoint:
    """Checkpoint `seq` of run `run_id`, at `step` with `status`, adding `messages` (if any),
    with `fields` set."""
    if messages:
        fields["messages"] = messages
    return Checkpoint(run_id=run_id, seq=seq, step=step, status=status, **fields)
