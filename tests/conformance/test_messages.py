"""Messages and other free text round-trip losslessly through the store."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from store import Batch
from store import Checkpoint
from store import Message
from store import Run
from store import RunStatus
from store import Store
from store import ToolCall

from .builders import Clock
from .builders import MakeRun
from .builders import json_values

# The store is shared by the examples of one test; each example writes under a fresh run id.
EXAMPLES = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)

JSON_VALUES = json_values(max_leaves=8)
tool_calls = st.builds(
    ToolCall,
    id=st.text(min_size=1, max_size=12),
    name=st.text(min_size=1, max_size=12),
    arguments=st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=4),
)
messages = st.builds(
    Message,
    role=st.sampled_from(["system", "user", "assistant", "tool"]),
    content=st.text(),
    tool_calls=st.lists(tool_calls, max_size=3).map(tuple),
    tool_call_id=st.none() | st.text(max_size=12),
    name=st.none() | st.text(max_size=12),
)


def dump(items: tuple[Message, ...]) -> list[dict[str, Any]]:
    """Messages as plain data, so that 1 and 1.0 or () and [] cannot pass for each other."""
    return [m.model_dump(mode="json") for m in items]


async def _round_trip(
    store: Store, run: Run, first: tuple[Message, ...], later: tuple[Message, ...], at: datetime
) -> None:
    cp = Checkpoint(
        run_id=run.id, seq=1, step=1, status=RunStatus.RUNNING, messages=later, created_at=at
    )
    await store.commit(Batch(run_id=run.id, checkpoints=[cp]))

    state = await store.load_state(run.id)
    history = await store.history(run.id)

    assert state.messages == first + later
    assert dump(state.messages) == dump(first + later)
    assert [dump(c.messages) for c in history] == [dump(first), dump(later)]


async def test_messages_round_trip_losslessly(
    store: Store, make_run: MakeRun, clock: Clock
) -> None:
    call = ToolCall(
        id="call_Ω1",
        name="issue_refund",
        arguments={
            "order_id": "4471",
            "amount_cents": 2500,
            "ratio": 0.1,
            "tags": ["a", None],
            "nested": {"ok": True, "empty": {}, "list": []},
            "big": 2**70,
        },
    )
    first = (
        Message(role="system", content="Tu es un agent. 退款助手. مرحبا"),
        Message(role="user", content=""),
    )
    later = (
        Message(role="assistant", content="", tool_calls=(call,)),
        Message(
            role="tool",
            content='{"ok": true}\n\t"quoted" \\ back\x00slash 🧾',
            tool_call_id="call_Ω1",
            name="issue_refund",
        ),
        Message(role="assistant", content="e\u0301 \u200b <@U123> &amp; `code`"),
    )
    run = await make_run(messages=first)

    await _round_trip(store, run, first, later, clock())


@EXAMPLES
@given(
    first=st.lists(messages, max_size=3).map(tuple), later=st.lists(messages, max_size=4).map(tuple)
)
async def test_random_messages_round_trip_losslessly(
    store: Store,
    make_run: MakeRun,
    clock: Clock,
    first: tuple[Message, ...],
    later: tuple[Message, ...],
) -> None:
    run = await make_run(messages=first)

    await _round_trip(store, run, first, later, clock())


@EXAMPLES
@given(task=st.text(min_size=1), requested_by=st.none() | st.text())
async def test_run_text_round_trips_losslessly(
    store: Store, make_run: MakeRun, task: str, requested_by: str | None
) -> None:
    run = await make_run(task=task, requested_by=requested_by)

    assert await store.get_run(run.id) == run
