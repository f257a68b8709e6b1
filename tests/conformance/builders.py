"""Types and record builders shared by the conformance tests."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, Literal

from store import Approval, Checkpoint, Committed, Effect, Message, Page, Run, RunStatus

Clock = Callable[[], datetime]
MakeRun = Callable[..., Awaitable[Run]]
Append = Callable[..., Awaitable[Committed]]
MakeEffect = Callable[..., Effect]
MakeApproval = Callable[..., Approval]
MakePage = Callable[..., Page]
Role = Literal["system", "user", "assistant", "tool"]


def text(content: str, role: Role = "assistant") -> Message:
    return Message(role=role, content=content)


def checkpoint(run_id: str, seq: int, at: datetime, **fields: Any) -> Checkpoint:
    """A checkpoint at `seq` (step = seq unless told), running unless told."""
    fields.setdefault("step", seq)
    fields.setdefault("status", RunStatus.RUNNING)
    return Checkpoint(run_id=run_id, seq=seq, created_at=at, **fields)
