"""A run on a hosted model whose provider keeps failing stops as failed with the provider's
error; `signoff runs resume ID`, in a new process configured by signoff.toml, goes on from the
same step, sends byte for byte the request that failed, and runs no tool again."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.settings import load_settings
from bot.wiring import assemble
from runtime import Agent, Budget
from runtime.models import OpenAIModel, Price
from runtime.models.config import configure
from store import RunStatus, open_store

from . import agents
from .fake_provider import KEY, Failure, FakeProvider, Turn

ROOT = Path(__file__).parent.parent.parent
_BESIDE_PYTHON = Path(sys.executable).with_name("signoff")
SIGNOFF = str(_BESIDE_PYTHON) if _BESIDE_PYTHON.exists() else shutil.which("signoff") or "signoff"
PRICE = Price(input_per_mtok=1.0, output_per_mtok=2.0)
MODEL = {"openai": "gpt-5.5", "anthropic": "claude-sonnet-5"}


def config(tmp_path: Path, kind: str, url: str) -> Path:
    path = tmp_path / "signoff.toml"
    path.write_text(
        f'database_url = "sqlite:///{tmp_path / "runs.db"}"\n'
        'agents = ["tests.models.agents:agent"]\n\n'
        "[models.shipper]\n"
        f'provider = "{kind}"\n'
        f'model = "{MODEL[kind]}"\n'
        f'base_url = "{url}"\n'
        "max_retries = 2\n"
        "timeout = 10\n\n"
        f'[prices."{MODEL[kind]}"]\n'
        "input_per_mtok = 2.0\n"
        "output_per_mtok = 8.0\n",
        "utf-8",
    )
    return path


def fail_after_first_answer(fake: FakeProvider) -> Callable[[dict[str, Any]], Turn]:
    """The provider answers the first call, then fails with 500 until told otherwise."""

    def brain(body: dict[str, Any]) -> Turn:
        if not any(m["role"] == "assistant" for m in body["messages"]):
            fake.fail_always = Failure(500)
            return Turn(calls=(("ship", {"order_id": "42"}),))
        return Turn(text="Shipped order 42.")

    return brain


async def test_a_failed_call_resumes_in_a_new_process_with_the_identical_request(
    kind: str, serve: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "tools.jsonl"
    monkeypatch.setenv("SIGNOFF_TEST_TOOL_LOG", str(log))
    fake, url = await serve(lambda body: Turn())
    fake.brain = fail_after_first_answer(fake)
    path = config(tmp_path, kind, url)
    process = await assemble(load_settings(path))
    try:
        run_id = await process.runtime.start("shipper", "Ship order 42.")
        failed = await process.runtime.get(run_id)
    finally:
        await process.close()

    assert (failed.status, failed.stop_reason, failed.step) == (RunStatus.FAILED, "error", 1)
    assert f"model: {kind} 500 after 2 retries" in (failed.error or "")
    assert agents.executed() == [["ship", "42"]]
    assert len(fake.seen) == 1 + 3
    assert failed.usage.cost > 0  # priced from [prices] in signoff.toml

    fake.fail_always = None
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SIGNOFF_", "SLACK_"))}
    env |= {
        "SIGNOFF_CONFIG": str(path),
        "SIGNOFF_TEST_TOOL_LOG": str(log),
        "PYTHONPATH": str(ROOT),
        "OPENAI_API_KEY": KEY,
        "ANTHROPIC_API_KEY": KEY,
    }
    resume = await asyncio.create_subprocess_exec(
        SIGNOFF,
        "runs",
        "resume",
        run_id,
        env=env,
        cwd=tmp_path,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _out, err = await asyncio.wait_for(resume.communicate(), 60)
    assert resume.returncode == 0, err.decode()

    async with open_store(f"sqlite:///{tmp_path / 'runs.db'}") as store:
        run = await store.get_run(run_id)
        state = await store.load_state(run_id)
    assert (run.status, run.step) == (RunStatus.DONE, 2)
    assert state.messages[-1].content == "Shipped order 42."
    assert agents.executed() == [["ship", "42"]]  # the tool did not run again
    failed_attempts, resumed = fake.seen[1:4], fake.seen[4]
    assert len(fake.seen) == 5
    assert {a.body for a in failed_attempts} == {resumed.body}  # byte for byte
    assert resumed.headers.get("x-stainless-retry-count") == "0"
    assert run.usage.steps == 2
    assert run.usage.cost > failed.usage.cost


def test_a_model_configured_for_an_agent_replaces_the_one_in_code(tmp_path: Path) -> None:
    settings = load_settings(config(tmp_path, "openai", "http://127.0.0.1:9/v1"))

    [agent] = configure([agents.agent], settings.models, settings.prices)

    assert isinstance(agent.model, OpenAIModel)
    assert (agent.model.model, agent.model.timeout, agent.model.max_retries) == ("gpt-5.5", 10, 2)
    assert agent.model.price is not None
    assert agent.model.price.output_per_mtok == 8.0
    assert agents.agent.model is not agent.model  # the agent in code is left as it was


def test_an_agent_with_a_cost_budget_and_no_price_is_warned_about(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = Agent("costly", model=OpenAIModel("gpt-5.5"), budget=Budget(max_cost=1.0))

    with caplog.at_level("WARNING", logger="signoff.models"):
        [same] = configure([agent], {}, {"another-model": PRICE})

    assert same is agent
    assert "agent costly has a cost budget but no price for gpt-5.5" in caplog.text
