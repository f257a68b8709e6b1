"""Types and record builders shared by the conformance tests."""

from __future__ import annotations

from collections.abc import Awaitable
from collections.abc import Callable
from datetime import datetime
from typing import Any
from typing import Literal

from hypothesis import strategies as st

from store import Approval
from store import Checkpoint
from store import Committed
from store import Effect
from store import EffectOutcome
from store import EffectStatus
from store import Message
from store import Page
from store import Run
from store import RunStatus

Clock = Callable[[], datetime]
MakeRun = Callable[..., Awaitable[Run]]
Append = Callable[..., Awaitable[Committed]]
MakeEffect = Callable[..., Effect]
MakeApproval = Callable[..., Approval]
MakePage = Callable[..., Page]
MakeOneOfEach = Callable[[str], tuple[Effect, Approval, Page]]
Role = Literal["system", "user", "assistant", "tool"]


def text(content: str, role: Role = "assistant") -> Message:
    return Message(role=role, content=content)


def checkpoint(run_id: str, seq: int, at: datetime, **fields: Any) -> Checkpoint:
    """A checkpoint at `seq` (step = seq unless told), running unless told."""
    fields.setdefault("step", seq)
    fields.setdefault("status", RunStatus.RUNNING)
    return Checkpoint(run_id=run_id, seq=seq, created_at=at, **fields)


def json_values(max_leaves: int) -> st.SearchStrategy[Any]:
    """Any JSON value (no NaN or infinity), nested up to `max_leaves` leaves."""
    return st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
        ),
        max_leaves=max_leaves,
    )


def completed(effect: Effect, at: datetime) -> EffectOutcome:
    """`effect` finished well at `at`, with the result {"ok": True}."""
    return EffectOutcome(
        run_id=effect.run_id,
        call_id=effect.call_id,
        status=EffectStatus.COMPLETED,
        result={"ok": True},
        finished_at=at,
    )
