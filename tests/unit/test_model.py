"""ScriptedModel: replies picked by the number of assistant turns in the transcript (never an
in-memory counter), policies, ids, token usage and cost."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from runtime import Message
from runtime import ModelError
from runtime import Reply
from runtime import ScriptedModel
from runtime import ToolCall
from runtime import tool_call
from runtime.model import Entry
from runtime.model import ScriptExhausted

SYSTEM = Message(role="system", content="s")
USER = Message(role="user", content="task")


def after(turns: int) -> list[Message]:
    """A transcript with `turns` assistant turns already in it."""
    messages = [SYSTEM, USER]
    for i in range(turns):
        messages.append(Message(role="assistant", content=f"turn {i}"))
    return messages


async def test_reply_is_picked_by_the_assistant_turns_in_the_transcript() -> None:
    model = ScriptedModel(["first", "second", "third"])

    assert (await model.complete(after(1), [])).content == "second"
    assert (await model.complete(after(1), [])).content == "second"
    assert (await model.complete(after(0), [])).content == "first"
    assert (await model.complete(after(2), [])).content == "third"


async def test_tool_calls_get_ids_from_turn_and_position() -> None:
    model = ScriptedModel(
        [[tool_call("a"), tool_call("b", {"x": 1}), tool_call("c", id="mine")], "done"]
    )

    reply = await model.complete(after(0), [])

    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("call_1_1", "a", {}),
        ("call_1_2", "b", {"x": 1}),
        ("mine", "c", {}),
    ]


async def test_a_single_tool_call_entry() -> None:
    model = ScriptedModel(["x", tool_call("look", {"q": "k"})])

    reply = await model.complete(after(1), [])

    assert reply.content == ""
    assert reply.tool_calls == (ToolCall(id="call_2_1", name="look", arguments={"q": "k"}),)


async def test_an_entry_may_be_a_function_of_the_transcript() -> None:
    seen: list[int] = []

    def second(messages: Sequence[Message]) -> Entry:
        seen.append(len(messages))
        return f"I see {len(messages)} messages"

    model = ScriptedModel(["first", second])

    assert (await model.complete(after(1), [])).content == "I see 3 messages"
    assert seen == [3]


async def test_one_function_is_a_policy_for_every_turn() -> None:
    def policy(messages: Sequence[Message]) -> Entry:
        turns = sum(m.role == "assistant" for m in messages)
        return tool_call("step", {"n": turns}) if turns < 2 else "finished"

    model = ScriptedModel(policy)

    assert (await model.complete(after(0), [])).tool_calls[0].arguments == {"n": 0}
    assert (await model.complete(after(1), [])).tool_calls[0].id == "call_2_1"
    assert (await model.complete(after(7), [])).content == "finished"


async def test_a_reply_entry_is_used_as_is_but_usage_is_estimated() -> None:
    model = ScriptedModel([Reply(content="hi", tool_calls=(tool_call("t"),))])

    reply = await model.complete(after(0), [])

    assert reply.content == "hi"
    assert reply.tool_calls[0].id == "call_1_1"
    assert reply.usage.output_tokens >= 1


async def test_an_exception_entry_is_raised() -> None:
    model = ScriptedModel([ModelError("provider down")])

    with pytest.raises(ModelError, match="provider down"):
        await model.complete(after(0), [])


async def test_running_out_of_script_is_a_model_error() -> None:
    model = ScriptedModel(["only"])

    with pytest.raises(ScriptExhausted, match="1 replies; turn 2"):
        await model.complete(after(1), [])
    assert issubclass(ScriptExhausted, ModelError)


async def test_usage_counts_about_four_characters_a_token() -> None:
    model = ScriptedModel(["x" * 40])
    transcript = [Message(role="user", content="y" * 400)]

    reply = await model.complete(transcript, [])

    assert 100 <= reply.usage.input_tokens <= 110
    assert reply.usage.output_tokens == 10
    assert (reply.usage.steps, reply.usage.cost) == (0, 0.0)


async def test_a_longer_transcript_costs_more_input_tokens() -> None:
    model = ScriptedModel(lambda messages: "ok")
    short = [USER]
    longer = [USER, Message(role="assistant", content="z" * 400), USER]

    assert (await model.complete(longer, [])).usage.input_tokens > (
        await model.complete(short, [])
    ).usage.input_tokens + 90


async def test_usage_is_at_least_one_token_each_way() -> None:
    reply = await ScriptedModel([""]).complete([], [])

    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (1, 1)


async def test_cost_is_priced_per_thousand_tokens() -> None:
    model = ScriptedModel(["x" * 400], cost_per_1k_input=2.0, cost_per_1k_output=10.0)
    transcript = [Message(role="user", content="y" * 4000)]

    usage = (await model.complete(transcript, [])).usage

    assert usage.output_tokens == 100
    assert usage.cost == pytest.approx((usage.input_tokens * 2.0 + 100 * 10.0) / 1000)
    assert 3.0 <= usage.cost <= 3.1


def test_tool_call_helper() -> None:
    assert tool_call("t") == ToolCall(id="", name="t", arguments={})
    assert tool_call("t", {"a": 1}, id="x") == ToolCall(id="x", name="t", arguments={"a": 1})
