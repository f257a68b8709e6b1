"""Translation between Signoff's transcript and each provider's format, both ways, for every
kind of message: transcript -> request -> transcript is the identity, a documented response
becomes the reply the next request sends back, and the request is a function of the
transcript alone (so a restart re-sends it byte for byte)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from runtime.model import UNPARSED_ARGUMENTS
from runtime.models import AnthropicModel
from runtime.models import OpenAIModel
from runtime.models import Price
from runtime.models import translate_anthropic as anthropic_format
from runtime.models import translate_openai as openai_format
from runtime.models.pricing import Tokens
from runtime.models.pricing import cost
from runtime.runs import results
from store import Approval
from store import ApprovalState
from store import Message
from store import ToolCall
from store.records import MESSAGES

from . import agents

DECLINED = Approval(
    id="apr_1",
    tool="ship",
    args={"order_id": "7"},
    state=ApprovalState.DECLINED,
    decided_by="U0BOB",
    reason="not this one",
)
CALLS = (
    ToolCall(id="c1", name="lookup", arguments={"order_id": "7", "note": "ünïcode"}),
    ToolCall(id="c2", name="ship", arguments={"order_id": "7"}),
)
TRANSCRIPT = [
    Message(role="system", content=agents.PROMPT),
    Message(role="user", content="Ship order 7."),
    Message(role="assistant", content="Looking both up.", tool_calls=CALLS),  # text + calls
    results.result("c1", "lookup", {"order_id": "7", "cents": 1200}),
    results.declined("c2", "ship", DECLINED),
    Message(role="assistant", tool_calls=(ToolCall(id="c3", name="ship", arguments={}),)),
    results.failure("c3", "ship", "did not happen, according to U0OPS"),
    Message(
        role="assistant",
        tool_calls=(
            ToolCall(id="c4", name="nope", arguments={}),
            ToolCall(id="c5", name="ship", arguments={"order_id": 7}),
        ),
    ),
    results.error("c4", "nope", "unknown tool 'nope'; the tools are: lookup, ship"),
    results.error("c5", "ship", "invalid arguments for ship: order_id: Input should be a string"),
    Message(role="user", content="Please try once more."),
    Message(role="assistant", tool_calls=(ToolCall(id="c6", name="lookup", arguments={}),)),
    results.dry_run("c6", "lookup", {}),
    Message(role="tool", tool_call_id="c6b", name=None, content="plain text result"),
    Message(role="assistant", content="Order 7 was not shipped: a human declined it."),
]
# c6b has no call: drop it so the transcript is one a run could have.
TRANSCRIPT = [m for m in TRANSCRIPT if m.tool_call_id != "c6b"]


def test_every_message_kind_round_trips_through_the_openai_format() -> None:
    request = openai_format.messages(TRANSCRIPT)

    assert openai_format.transcript(json.loads(json.dumps(request))) == TRANSCRIPT
    assert request[0] == {"role": "system", "content": agents.PROMPT}
    assert request[2]["tool_calls"][0] == {
        "id": "c1",
        "type": "function",
        "function": {"name": "lookup", "arguments": '{"order_id":"7","note":"ünïcode"}'},
    }
    assert request[5]["content"] is None  # calls without text
    declined = json.loads(request[4]["content"])
    assert (declined["executed"], declined["declined_by"]) == (False, "U0BOB")
    assert "Do not retry" in declined["instruction"]


def test_every_message_kind_round_trips_through_the_anthropic_format() -> None:
    system = anthropic_format.system(TRANSCRIPT)
    turns = json.loads(json.dumps(anthropic_format.messages(TRANSCRIPT)))

    assert anthropic_format.transcript(system, turns) == TRANSCRIPT
    assert system == agents.PROMPT
    assert [t["role"] for t in turns] == ["user", "assistant"] * 5
    results_turn = turns[2]["content"]  # both results of the parallel calls, in one turn
    assert [(b["tool_use_id"], b.get("is_error")) for b in results_turn] == [
        ("c1", None),
        ("c2", True),  # declined: not executed
    ]
    assert turns[4]["content"][0]["is_error"] is True  # did not happen, according to U0OPS
    # The errors and then the user's follow-up share one user turn, results first.
    assert [b["type"] for b in turns[6]["content"]] == ["tool_result", "tool_result", "text"]
    assert turns[1]["content"] == [
        {"type": "text", "text": "Looking both up."},
        {"type": "tool_use", "id": "c1", "name": "lookup", "input": CALLS[0].arguments},
        {"type": "tool_use", "id": "c2", "name": "ship", "input": {"order_id": "7"}},
    ]


def test_arguments_that_are_not_a_json_object_are_sent_back_as_the_model_wrote_them() -> None:
    for raw in ('{"order_id": ', "[1, 2]", "null"):
        [call] = openai_format.reply(_completion([_openai_call("c9", "ship", raw)]))[1]
        assert call.arguments == {UNPARSED_ARGUMENTS: raw}

        [sent] = openai_format.messages([Message(role="assistant", tool_calls=(call,))])

        assert sent["tool_calls"][0]["function"]["arguments"] == raw


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_documented_response_becomes_the_reply_the_next_request_sends_back(kind: str) -> None:
    if kind == "openai":
        calls = [
            _openai_call("call_a", "lookup", '{"order_id": "7"}'),
            _openai_call("call_b", "ship", '{"order_id":"7"}'),
        ]
        response = _completion(calls, content="On it.")
        content, parsed = openai_format.reply(response)
        [sent] = openai_format.messages(
            [Message(role="assistant", content=content, tool_calls=parsed)]
        )
        assert sent["content"] == "On it."
        assert [c["id"] for c in sent["tool_calls"]] == ["call_a", "call_b"]
        assert [json.loads(c["function"]["arguments"]) for c in sent["tool_calls"]] == [
            json.loads(c["function"]["arguments"]) for c in calls
        ]
    else:
        response = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-5",
            "content": [
                {"type": "text", "text": "On it."},
                {"type": "tool_use", "id": "toolu_a", "name": "lookup", "input": {"order_id": "7"}},
                {"type": "tool_use", "id": "toolu_b", "name": "ship", "input": {"order_id": "7"}},
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
        content, parsed = anthropic_format.reply(response)
        turns = anthropic_format.messages(
            [
                Message(role="user", content="x"),
                Message(role="assistant", content=content, tool_calls=parsed),
            ]
        )
        assert turns[1] == {"role": "assistant", "content": response["content"]}


@pytest.mark.parametrize("model_class", [OpenAIModel, AnthropicModel])
def test_the_request_is_a_function_of_the_transcript_stored_and_loaded(model_class: Any) -> None:
    model = model_class("m")
    specs = [agents.lookup.spec(), agents.ship.spec()]
    stored = MESSAGES.validate_json(MESSAGES.dump_json(tuple(TRANSCRIPT)))

    before = json.dumps(model.request(TRANSCRIPT, specs))
    after = json.dumps(model_class("m").request(list(stored), specs))

    assert before == after


def test_usage_counts_every_prompt_token_and_prices_cached_ones_apart() -> None:
    openai_tokens = openai_format.tokens(
        {
            "usage": {
                "prompt_tokens": 1000,
                "completion_tokens": 50,
                "prompt_tokens_details": {"cached_tokens": 800},
            }
        }
    )
    anthropic_tokens = anthropic_format.tokens(
        {
            "usage": {
                "input_tokens": 200,
                "output_tokens": 50,
                "cache_read_input_tokens": 700,
                "cache_creation_input_tokens": 100,
            }
        }
    )
    price = Price(
        input_per_mtok=3.0,
        output_per_mtok=15.0,
        cached_input_per_mtok=0.3,
        cache_write_per_mtok=3.75,
    )

    assert openai_tokens == Tokens(input=200, output=50, cached_input=800)
    assert openai_tokens.prompt == anthropic_tokens.prompt == 1000
    assert cost(openai_tokens, price) == pytest.approx((200 * 3 + 800 * 0.3 + 50 * 15) / 1e6)
    assert cost(anthropic_tokens, price) == pytest.approx(
        (200 * 3 + 700 * 0.3 + 100 * 3.75 + 50 * 15) / 1e6
    )
    assert cost(openai_tokens, None) == 0.0


def _openai_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _completion(calls: list[dict[str, Any]], content: str | None = None) -> dict[str, Any]:
    message = {"role": "assistant", "content": content, "refusal": None, "tool_calls": calls}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-5.5",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
