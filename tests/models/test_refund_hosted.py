"""The refund example on a hosted model (examples/hosted_refund_agent.py), end to end against
a fake of either provider: the model's calls, a human's approval or decline, the money moved
once, and the transcript the provider saw."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from examples import refund_agent
from examples import world as example_world
from runtime import Agent
from runtime import Runtime
from runtime.models import Price
from runtime.models import translate_anthropic
from runtime.models import translate_openai
from runtime.models.config import ModelConfig
from runtime.models.config import configure
from store import RunStatus
from store import open_store

from .conftest import OPENED
from .fake_provider import Turn

ORDER = "1001"  # the example world charges a 500-cent restocking fee on it
PRICES = {
    "gpt-5.5": Price(input_per_mtok=1.25, output_per_mtok=10.0),
    "claude-sonnet-5": Price(input_per_mtok=3.0, output_per_mtok=15.0),
}


def refund_brain(kind: str) -> Callable[[dict[str, Any]], Turn]:
    """A model that reads the request as the provider would and acts like a careful agent."""

    def brain(body: dict[str, Any]) -> Turn:
        if kind == "openai":
            messages = translate_openai.transcript(body["messages"])
        else:
            messages = translate_anthropic.transcript(body.get("system", ""), body["messages"])
        entry = refund_agent.policy(messages)
        if isinstance(entry, str):
            return Turn(text=entry)
        return Turn(calls=((entry.name, dict(entry.arguments)),))

    return brain


def hosted_example(kind: str, url: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setenv("SIGNOFF_MODEL_PROVIDER", kind)
    monkeypatch.setenv("OPENAI_BASE_URL" if kind == "openai" else "ANTHROPIC_BASE_URL", url)
    module = importlib.reload(importlib.import_module("examples.hosted_refund_agent"))
    OPENED.append(module.agent.model)
    return module


def configured_example(kind: str, url: str) -> Agent:
    """examples/refund_agent.py's own agent, its model chosen by [models.refund-agent]."""
    model = "gpt-5.5" if kind == "openai" else "claude-sonnet-5"
    config = ModelConfig(provider=kind, model=model, base_url=url)  # type: ignore[arg-type]
    [agent] = configure([refund_agent.agent], {"refund-agent": config}, PRICES)
    return agent


@pytest.mark.parametrize("decision", ["approved", "declined"])
@pytest.mark.parametrize("source", ["hosted_refund_agent.py", "refund_agent.py + signoff.toml"])
async def test_the_refund_agent_on_a_hosted_model_runs_end_to_end_with_a_humans_decision(
    kind: str,
    serve: Callable[..., Any],
    world: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    decision: str,
    source: str,
) -> None:
    fake, url = await serve(refund_brain(kind))
    if source == "hosted_refund_agent.py":
        [agent] = configure([hosted_example(kind, url, monkeypatch).agent], {}, PRICES)
    else:
        agent = configured_example(kind, url)
    OPENED.append(agent.model)  # type: ignore[arg-type]

    async with open_store(f"sqlite:///{tmp_path / 'runs.db'}") as store:
        rt = Runtime(store, [agent], worker_id="hosted-refund")
        run_id = await rt.start("refund-agent", f"Refund order {ORDER}", requested_by="U0REQ")
        parked = await rt.get(run_id)
        [approval] = await rt.approvals(run_id)
        await rt.decide(approval.id, decision, by="U0BOB", reason="policy says no")
        run = await rt.get(run_id)
        answer = (await store.load_state(run_id)).messages[-1].content

    assert parked.status == RunStatus.WAITING_APPROVAL
    assert approval.tool == "issue_refund"
    assert approval.args["restocking_fee_cents"] == 500
    stopped = "declined" if decision == "declined" else "answered"  # what it did, not said
    assert (run.status, run.stop_reason) == (RunStatus.DONE, stopped)
    assert run.usage.cost > 0
    payments = [(kind_, ref, cents) for kind_, ref, cents, _ in example_world.payments()]
    last = fake.seen[-1].json
    if decision == "approved":
        assert payments == [
            ("refund", ORDER, approval.args["amount_cents"]),
            ("charge", f"INV-{ORDER}", 500),
        ]
        assert answer.startswith(f"Refunded order {ORDER}")
    else:
        assert payments == []
        assert answer == f"The refund for order {ORDER} was not made; I told the customer."
        # The decline reached the model as a structured result that says not to retry.
        sent = str(last)
        assert "A human declined this call. Do not retry it" in sent
        if kind == "anthropic":
            declined = [
                b
                for t in last["messages"]
                if t["role"] == "user" and isinstance(t["content"], list)
                for b in t["content"]
                if b.get("type") == "tool_result" and "declined" in b["content"]
            ]
            assert [b.get("is_error") for b in declined] == [True]
    assert len(example_world.emails()) == 1
    # Each provider call was made once per step: no step was asked twice.
    assert len(fake.seen) == run.step
