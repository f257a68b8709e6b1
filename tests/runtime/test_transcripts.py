"""Messages and tool calls survive the store losslessly, and a resumed transcript is never
malformed: one system message, every tool result right after the call it answers."""

from __future__ import annotations

import json
from typing import Any

from runtime_scenarios import STAMPER_SCRIPT
from runtime_scenarios import WORKER_ID
from runtime_scenarios import OpenDb
from runtime_scenarios import RecordingModel
from runtime_scenarios import Worker
from runtime_scenarios import assert_well_formed
from runtime_scenarios import counter_agent
from runtime_scenarios import counting_policy
from runtime_scenarios import stamper_agent

from runtime import Agent
from runtime import Budget
from runtime import Message
from runtime import Runtime
from runtime import ScriptedModel
from runtime import ToolCall
from runtime import tool
from runtime import tool_call
from store import Batch
from store import Checkpoint
from store import EffectStatus
from store import Run
from store import RunStatus

AWKWARD: dict[str, Any] = {
    "text": 'naïve ☃ "quoted" \\ back\nslash </tool> ]}, 𝄞 \u0000 end',
    "nested": {"list": [1, 2.5, None, True, "x", [], {}], "empty": "", "big": 2**53 + 1},
}


@tool(description="Echo what it is given.", effect="read")
async def echo(text: str, nested: dict[str, Any]) -> dict[str, Any]:
    return {"text": text, "nested": nested}


def echo_agent(model: RecordingModel) -> Agent:
    return Agent("echo", model=model, tools=[echo], system_prompt="Echo.")


async def test_runtime_transcript_round_trips_through_a_new_connection(open_db: OpenDb) -> None:
    script = ScriptedModel(
        [
            ToolCall(id="tc-ü-1", name="echo", arguments=AWKWARD),
            "All echoed — ✓",
        ]
    )
    model = RecordingModel(script)
    rt = Runtime(await open_db(), [echo_agent(model)], worker_id="w")
    run_id = await rt.start("echo", "Echo this: <&> ☃")

    state = await (await open_db()).load_state(run_id)

    last_reply = Message(role="assistant", content="All echoed — ✓")
    assert list(state.messages) == [*model.seen[-1], last_reply]
    call = state.messages[2].tool_calls[0]
    assert call == ToolCall(id="tc-ü-1", name="echo", arguments=AWKWARD)
    result = state.messages[3]
    assert (result.role, result.tool_call_id, result.name) == ("tool", "tc-ü-1", "echo")
    assert json.loads(result.content) == AWKWARD


async def test_store_keeps_every_message_field(open_db: OpenDb) -> None:
    store = await open_db()
    messages = (
        Message(role="system", content="s"),
        Message(role="user", content=""),
        Message(
            role="assistant",
            content="thinking…",
            tool_calls=(
                ToolCall(id="c1", name="t", arguments={"a": [1, {"b": None}]}),
                ToolCall(id="c2", name="t"),
            ),
        ),
        Message(role="tool", content='{"x": 1}', tool_call_id="c1", name="t"),
        Message(role="tool", content="plain", tool_call_id="c2", name="t"),
    )
    run = Run(id="r", agent="a", task="t", lineage_id="r")
    await store.create_run(
        run, Checkpoint(run_id="r", seq=0, step=0, snapshot=True, status=RunStatus.RUNNING)
    )
    checkpoint = Checkpoint(run_id="r", seq=1, step=1, status=RunStatus.RUNNING, messages=messages)
    await store.commit(Batch(run_id="r", checkpoints=[checkpoint]))

    loaded = (await (await open_db()).load_state("r")).messages
    assert [m.model_dump(mode="json") for m in loaded] == [
        m.model_dump(mode="json") for m in messages
    ]


async def test_resumed_transcript_has_one_system_message(open_db: OpenDb) -> None:
    rt = Runtime(await open_db(), [counter_agent()], worker_id="first")
    run_id = await rt.start("counter", "Count", budget=Budget(max_steps=2))
    model = RecordingModel(ScriptedModel(counting_policy))
    rt2 = Runtime(await open_db(), [counter_agent(model)], worker_id="second")

    await rt2.resume(run_id, budget=Budget(max_steps=4))
    await rt2.resume(run_id, budget=Budget(max_steps=5))

    state = await rt2.store.load_state(run_id)
    assert_well_formed(state.messages, settled=True)
    assert [m.role for m in state.messages].count("system") == 1
    assert len(model.seen) == 3
    for seen in model.seen:
        assert_well_formed(seen)


async def test_crash_inside_a_multi_call_reply_resumes_well_formed(
    run_worker: Worker, open_db: OpenDb
) -> None:
    done = run_worker("stamper", "stamps", "Stamp a to d", die="stamp:b")
    assert done.killed, done.stderr
    store = await open_db()
    before = await store.load_state("stamps")
    assert [m.tool_call_id for m in before.messages if m.role == "tool"] == ["call_1_1"]
    assert (await store.get_effect("stamps", "call_1_2")).status == EffectStatus.STARTED

    model = RecordingModel(ScriptedModel(STAMPER_SCRIPT))
    run = await Runtime(store, [stamper_agent(model)], worker_id=WORKER_ID).drive("stamps")

    assert run.status == RunStatus.DONE
    state = await store.load_state("stamps")
    assert_well_formed(state.messages)
    tool_messages = [(m.tool_call_id, m.content) for m in state.messages if m.role == "tool"]
    assert tool_messages == [
        ("call_1_1", "stamped a"),
        ("call_1_2", "stamped b"),
        ("call_1_3", "stamped c"),
        ("call_2_1", "stamped d"),
    ]
    for seen in model.seen:
        assert_well_formed(seen)


async def test_model_is_never_shown_an_open_call(open_db: OpenDb) -> None:
    model = RecordingModel(
        ScriptedModel(
            [
                [tool_call("echo", {"text": "1", "nested": {}}), tool_call("nope", {})],
                tool_call("echo", {"text": 2, "nested": {}}),
                "done",
            ]
        )
    )
    rt = Runtime(await open_db(), [echo_agent(model)], worker_id="w")
    run_id = await rt.start("echo", "Echo")

    assert (await rt.get(run_id)).status == RunStatus.DONE
    assert len(model.seen) == 3
    for seen in model.seen:
        assert_well_formed(seen)
