"""Runs on a hosted model, through the real SDK, against a local fake of each provider's API:
tool turns, final answers, parallel calls, rate limits and 5xx (the SDK's own retries), usage
and cost in the run's budget, budgets that stop a call before it is made, timeouts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runtime import Agent
from runtime import Budget
from runtime import Runtime
from runtime.models import Price
from runtime.models import translate_anthropic
from runtime.models import translate_openai
from store import Message
from store import RunStatus
from store import Store
from store import open_store

from . import agents
from .conftest import model_for
from .fake_provider import Failure
from .fake_provider import Turn

LOOKUP_42 = Turn(calls=(("lookup", {"order_id": "42"}),))
"""The model asks the tool to look order 42 up."""


@pytest.fixture(autouse=True)
def tool_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "tools.jsonl"
    monkeypatch.setenv("SIGNOFF_TEST_TOOL_LOG", str(path))
    return path


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'runs.db'}"


def scripted(*turns: Turn) -> Callable[[dict[str, Any]], Turn]:
    """Answer turn k to a request holding k assistant turns (restart-safe, like the provider)."""

    def brain(body: dict[str, Any]) -> Turn:
        done = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return turns[done]

    return brain


def transcript_of(kind: str, body: dict[str, Any]) -> list[Message]:
    if kind == "openai":
        return translate_openai.transcript(body["messages"])
    return translate_anthropic.transcript(body.get("system", ""), body["messages"])


async def run_on(
    store: Store, kind: str, url: str, *, budget: Budget | None = None, **options: Any
) -> tuple[Runtime, str]:
    agent = Agent(
        "shipper",
        model=model_for(kind, url, **options),
        tools=[agents.lookup, agents.ship],
        system_prompt=agents.PROMPT,
        budget=budget,
    )
    rt = Runtime(store, [agent], worker_id="hosted-test")
    return rt, await rt.start("shipper", "What does order 42 cost?")


async def test_a_tool_turn_then_a_final_answer(
    kind: str, serve: Callable[..., Any], db: str
) -> None:
    fake, url = await serve(scripted(LOOKUP_42, Turn(text="It costs $12.")))
    async with open_store(db) as store:
        rt, run_id = await run_on(store, kind, url)
        run = await rt.get(run_id)
        state = await store.load_state(run_id)

    assert (run.status, run.stop_reason, run.step) == (RunStatus.DONE, "answered", 2)
    assert state.messages[-1].content == "It costs $12."
    assert agents.executed() == [["lookup", "42"]]
    first, second = (seen.json for seen in fake.seen)
    [call] = state.messages[2].tool_calls
    result = '{"order_id":"42","cents":1200}'
    if kind == "openai":
        assert first["messages"][0] == {"role": "system", "content": agents.PROMPT}
        assert first["tools"][0] == {
            "type": "function",
            "function": {
                "name": "lookup",
                "description": agents.lookup.description,
                "parameters": agents.lookup.spec().parameters,
            },
        }
        assert second["messages"][-1] == {
            "role": "tool",
            "tool_call_id": call.id,
            "content": result,
        }
    else:
        assert first["system"] == agents.PROMPT
        assert all(m["role"] in ("user", "assistant") for m in first["messages"])
        assert first["tools"][0] == {
            "name": "lookup",
            "description": agents.lookup.description,
            "input_schema": agents.lookup.spec().parameters,
        }
        assert second["messages"][-1] == {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call.id, "content": result}],
        }


async def test_parallel_calls_with_text_round_trip_through_the_provider(
    kind: str, serve: Callable[..., Any], db: str
) -> None:
    both = (("lookup", {"order_id": "1"}), ("ship", {"order_id": "2"}))
    fake, url = await serve(scripted(Turn(text="Doing both.", calls=both), Turn(text="Done.")))
    async with open_store(db) as store:
        _rt, run_id = await run_on(store, kind, url)
        state = await store.load_state(run_id)

    assert agents.executed() == [["lookup", "1"], ["ship", "2"]]
    reply = state.messages[2]
    assert reply.content == "Doing both."
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [(n, a) for n, a in both]
    # The provider's ids are kept, so its next request pairs each result with its call.
    last = fake.seen[-1].json
    assert transcript_of(kind, last) == list(state.messages[:-1])
    if kind == "anthropic":
        results = last["messages"][-1]["content"]
        assert [b["tool_use_id"] for b in results] == [c.id for c in reply.tool_calls]


async def test_a_429_is_retried_by_the_sdk_after_retry_after(
    kind: str, serve: Callable[..., Any], db: str
) -> None:
    fake, url = await serve(scripted(Turn(text="Hello.")))
    fake.failures.append(Failure(429, retry_after="1"))
    async with open_store(db) as store:
        rt, run_id = await run_on(store, kind, url)
        run = await rt.get(run_id)

    assert run.status == RunStatus.DONE
    limited, answered = fake.seen
    assert answered.headers.get("x-stainless-retry-count") == "1"
    assert answered.at - limited.at >= 0.95  # the SDK waited as the provider asked
    assert answered.body == limited.body


async def test_retries_exhausted_fail_the_run_with_the_providers_error(
    kind: str, serve: Callable[..., Any], db: str
) -> None:
    fake, url = await serve(scripted(Turn(text="never")))
    fake.fail_always = Failure(500)
    async with open_store(db) as store:
        rt, run_id = await run_on(store, kind, url, max_retries=2)
        run = await rt.get(run_id)

    assert (run.status, run.stop_reason, run.step) == (RunStatus.FAILED, "error", 0)
    assert len(fake.seen) == 3  # one attempt and the SDK's two retries
    assert run.error is not None
    assert run.error.startswith(f"model: {kind} 500 after 2 retries: ")
    assert "The server had an error while processing your request." in run.error
    assert run.error.endswith(f"(request req_{len(fake.seen):06d})")  # the last attempt's


async def test_usage_and_cost_of_each_call_go_into_the_runs_durable_usage(
    kind: str, serve: Callable[..., Any], db: str
) -> None:
    price = Price(input_per_mtok=2.0, output_per_mtok=8.0, cached_input_per_mtok=0.5)
    fake, url = await serve(
        scripted(
            Turn(calls=(("lookup", {"order_id": "42"}),), cached_tokens=7),
            Turn(text="It costs $12.", cached_tokens=3),
        )
    )
    async with open_store(db) as store:
        _rt, run_id = await run_on(store, kind, url, price=price)
    async with open_store(db) as reopened:
        usage = (await reopened.get_run(run_id)).usage

    if kind == "openai":  # prompt_tokens include the cached ones
        prompts = [u["prompt_tokens"] for u in fake.reported]
        cached = [u["prompt_tokens_details"]["cached_tokens"] for u in fake.reported]
        outputs = [u["completion_tokens"] for u in fake.reported]
    else:  # input_tokens exclude cache reads and writes
        prompts = [
            u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]
            for u in fake.reported
        ]
        cached = [u["cache_read_input_tokens"] for u in fake.reported]
        outputs = [u["output_tokens"] for u in fake.reported]
    expected_cost = sum(
        ((p - c) * 2.0 + c * 0.5 + o * 8.0) / 1e6
        for p, c, o in zip(prompts, cached, outputs, strict=True)
    )
    assert cached == [7, 3]
    assert (usage.steps, usage.input_tokens, usage.output_tokens) == (
        2,
        sum(prompts),
        sum(outputs),
    )
    assert usage.cost == pytest.approx(expected_cost, rel=1e-9)
    assert usage.cost > 0
    assert usage.cached_input_tokens == 10  # kept apart, durably (and priced at 0.5 above)


@pytest.mark.parametrize(
    ("budget", "reason"),
    [(Budget(max_input_tokens=5), "token_budget"), (Budget(max_cost=1e-9), "cost_budget")],
)
async def test_a_call_that_would_exceed_the_budget_is_not_made(
    kind: str, serve: Callable[..., Any], db: str, budget: Budget, reason: str
) -> None:
    fake, url = await serve(scripted(Turn(text="never")))
    price = Price(input_per_mtok=2.0, output_per_mtok=8.0)
    async with open_store(db) as store:
        rt, run_id = await run_on(store, kind, url, budget=budget, price=price)
        run = await rt.get(run_id)

    assert (run.status, run.stop_reason) == (RunStatus.FAILED, reason)
    assert "the next model call (at least" in (run.error or "")
    assert fake.seen == []


async def test_the_second_call_is_refused_once_the_first_used_the_budget(
    kind: str, serve: Callable[..., Any], db: str
) -> None:
    fake, url = await serve(scripted(LOOKUP_42, Turn(text="never")))
    async with open_store(db) as store:
        # Room for the first prompt as estimated; the provider counts more than the estimate
        # (it is a floor), so the first call's usage plus the next one's do not fit.
        probe = model_for(kind, url)
        first = probe.estimate(
            [Message(role="system", content=agents.PROMPT), Message(role="user", content="x")],
            [agents.lookup.spec(), agents.ship.spec()],
        )
        budget = Budget(max_input_tokens=first.input_tokens + 10)
        rt, run_id = await run_on(store, kind, url, budget=budget)
        run = await rt.get(run_id)

    assert len(fake.seen) == 1
    assert (run.status, run.stop_reason, run.step) == (RunStatus.FAILED, "token_budget", 1)
    assert agents.executed() == [["lookup", "42"]]
    assert (
        run.usage.input_tokens
        == fake.reported[0]["input_tokens" if kind == "anthropic" else "prompt_tokens"]
    )


async def test_malformed_calls_go_back_to_the_model_as_errors(
    kind: str, serve: Callable[..., Any], db: str
) -> None:
    bad_args: dict[str, Any] | str = '{"order_id": ' if kind == "openai" else {"id": 42}
    calls = (("lookup", bad_args), ("refund_everything", {}))
    fake, url = await serve(scripted(Turn(calls=calls), Turn(text="Sorry.")))
    async with open_store(db) as store:
        rt, run_id = await run_on(store, kind, url)
        run = await rt.get(run_id)
        state = await store.load_state(run_id)

    assert run.status == RunStatus.DONE
    assert agents.executed() == []
    bad, unknown = state.messages[3:5]
    assert '"executed":false' in bad.content
    assert "lookup" in bad.content
    assert "unknown tool 'refund_everything'" in unknown.content
    last = fake.seen[-1].json["messages"]
    if kind == "openai":
        sent = last[2]["tool_calls"][0]["function"]["arguments"]
        assert sent == '{"order_id": '  # the model's own text, as it wrote it
        assert "not a JSON object" in bad.content
    else:
        assert [b.get("is_error") for b in last[-1]["content"]] == [True, True]


async def test_a_model_that_does_not_answer_in_time_fails_the_run(
    kind: str, serve: Callable[..., Any], db: str
) -> None:
    fake, url = await serve(scripted(Turn(text="too late")))
    fake.delay = 1.0
    async with open_store(db) as store:
        rt, run_id = await run_on(store, kind, url, timeout=0.2, max_retries=0)
        run = await rt.get(run_id)

    assert (run.status, run.stop_reason) == (RunStatus.FAILED, "error")
    assert run.error == f"model: {kind}: no answer within 0.2s (after 0 retries)"


async def test_a_refused_key_fails_the_run_at_once_with_the_providers_words(
    kind: str, serve: Callable[..., Any], db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-wrong")
    fake, url = await serve(scripted(Turn(text="never")))
    async with open_store(db) as store:
        rt, run_id = await run_on(store, kind, url)
        run = await rt.get(run_id)

    assert (run.status, run.stop_reason) == (RunStatus.FAILED, "error")
    assert len(fake.seen) == 1  # a 401 is not retried
    expected = (
        "model: openai 401: Incorrect API key provided. (invalid_request_error)"
        if kind == "openai"
        else "model: anthropic 401: invalid x-api-key (authentication_error)"
    )
    assert run.error == f"{expected} (request req_000001)"
