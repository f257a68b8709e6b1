"""History: any past state is rebuilt from the appended checkpoints, by seq or by step."""

from __future__ import annotations

from datetime import datetime

import pytest

from store import Batch
from store import Effect
from store import Message
from store import Run
from store import RunState
from store import RunStatus
from store import Store
from store import ToolCall
from store import Usage
from store import errors

from .builders import Append
from .builders import Clock
from .builders import MakeEffect
from .builders import MakeRun
from .builders import checkpoint
from .builders import completed
from .builders import text


def tool_turn(step: int) -> tuple[Message, Message]:
    """A realistic step: the model calls a tool, the tool answers."""
    call = ToolCall(
        id=f"call_{step}",
        name="lookup_order",
        arguments={"order_id": f"A-{step}", "fields": ["status", "amount"], "page": step % 3},
    )
    return (
        Message(role="assistant", content=f"Checking order A-{step}.", tool_calls=(call,)),
        Message(
            role="tool",
            tool_call_id=call.id,
            name=call.name,
            content=f'{{"order_id": "A-{step}", "status": "shipped", "amount": {step * 100}}}',
        ),
    )


async def test_load_state_of_a_new_run_is_its_snapshot(store: Store, make_run: MakeRun) -> None:
    run = await make_run(task="Refund order 4471")

    state = await store.load_state(run.id)

    assert state == RunState(
        run_id=run.id,
        seq=0,
        step=0,
        status=RunStatus.RUNNING,
        usage=Usage(),
        messages=(Message(role="user", content="Refund order 4471"),),
    )


async def test_load_state_by_seq_rebuilds_each_past_state(
    store: Store, make_run: MakeRun, append: Append
) -> None:
    run = await make_run(messages=[text("task", "user")])
    for word in ("a", "b", "c"):
        await append(run.id, [text(word)])

    contents = [
        [m.content for m in (await store.load_state(run.id, seq=seq)).messages] for seq in range(4)
    ]

    assert contents == [["task"], ["task", "a"], ["task", "a", "b"], ["task", "a", "b", "c"]]


async def test_load_state_by_step_is_the_last_checkpoint_of_that_step(
    store: Store, run: Run, append: Append
) -> None:
    await append(run.id, [text("decide")], step=1, usage=Usage(steps=1))
    await append(run.id, [text("result", "tool")], step=1, status=RunStatus.WAITING_APPROVAL)
    await append(run.id, [text("next")], step=2, usage=Usage(steps=2))

    state = await store.load_state(run.id, step=1)

    assert (state.seq, state.status, state.usage) == (2, RunStatus.WAITING_APPROVAL, Usage(steps=1))


async def test_load_state_carries_status_usage_stop_reason_and_error(
    store: Store, run: Run, clock: Clock
) -> None:
    usage = Usage(steps=4, input_tokens=1234, output_tokens=567, cost=0.0891)
    cp = checkpoint(
        run.id, 1, clock(), status=RunStatus.FAILED, usage=usage, stop_reason="error", error="boom"
    )
    await store.commit(Batch(run_id=run.id, checkpoints=[cp]))

    state = await store.load_state(run.id)

    assert (state.status, state.usage, state.stop_reason, state.error) == (
        RunStatus.FAILED,
        usage,
        "error",
        "boom",
    )


async def test_a_snapshot_restarts_the_transcript(
    store: Store, make_run: MakeRun, append: Append
) -> None:
    run = await make_run(messages=[text("task", "user")])
    await append(run.id, [text("a")], step=1)
    await append(run.id, [text("b")], step=2)
    await append(run.id, [text("task", "user"), text("a")], step=1, snapshot=True)  # rollback
    await append(run.id, [text("c")], step=2)

    latest = await store.load_state(run.id)
    before_rollback = await store.load_state(run.id, seq=2)

    assert [m.content for m in latest.messages] == ["task", "a", "c"]
    assert [m.content for m in before_rollback.messages] == ["task", "a", "b"]


@pytest.mark.parametrize(
    "where", [{"seq": 5}, {"seq": -1}, {"step": 9}], ids=["seq-ahead", "seq-negative", "step"]
)
async def test_load_state_at_a_point_that_does_not_exist_is_not_found(
    store: Store, run: Run, append: Append, where: dict[str, int]
) -> None:
    await append(run.id, [text("a")], step=1)

    with pytest.raises(errors.NotFound):
        await store.load_state(run.id, **where)


async def test_history_returns_every_checkpoint_in_order(
    store: Store, run: Run, clock: Clock
) -> None:
    committed = [(await store.history(run.id))[0]]
    for seq in range(1, 6):
        cp = checkpoint(
            run.id, seq, clock(), messages=(text(f"m{seq}"),), snapshot=seq == 3, step=seq // 2
        )
        await store.commit(Batch(run_id=run.id, checkpoints=[cp]))
        committed.append(cp)

    assert await store.history(run.id) == committed


async def test_state_at_step_k_after_200_steps_equals_the_state_at_step_k(
    store: Store, make_run: MakeRun, make_effect: MakeEffect, clock: Clock
) -> None:
    run = await make_run(messages=[text("You refund orders.", "system"), text("Refund", "user")])
    recorded = {0: await store.load_state(run.id)}
    transcripts = {0: recorded[0].messages}
    usage = Usage()
    for step in range(1, 201):
        usage = usage + Usage(steps=1, input_tokens=50 + step, output_tokens=20, cost=0.001)
        effect = make_effect(run.id, call_id=f"call_{step}", step=step, tool="lookup_order")
        transcripts[step] = transcripts[step - 1] + tool_turn(step)
        for batch in _step_batches(effect, usage, transcripts[step], clock()):
            await store.commit(batch)
        recorded[step] = await store.load_state(run.id)

    for step, state in recorded.items():
        assert (state.step, state.messages) == (step, transcripts[step])
        assert await store.load_state(run.id, step=step) == state, f"step {step}"


def _step_batches(
    effect: Effect, usage: Usage, transcript: tuple[Message, ...], at: datetime
) -> tuple[Batch, Batch]:
    """One step as the runtime writes it: the decision with the effect it starts, then the
    tool result with the effect's outcome; every 50th step ends in a full snapshot."""
    step, run_id = effect.step, effect.run_id
    decision, result = transcript[-2:]
    periodic = step % 50 == 0
    status = RunStatus.DONE if step == 200 else RunStatus.RUNNING
    return (
        Batch(
            run_id=run_id,
            checkpoints=[
                checkpoint(run_id, 2 * step - 1, at, step=step, usage=usage, messages=(decision,))
            ],
            start=[effect],
        ),
        Batch(
            run_id=run_id,
            checkpoints=[
                checkpoint(
                    run_id,
                    2 * step,
                    at,
                    step=step,
                    usage=usage,
                    status=status,
                    snapshot=periodic,
                    messages=transcript if periodic else (result,),
                )
            ],
            finish=[completed(effect, at)],
        ),
    )
