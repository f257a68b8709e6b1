"""A run on a hosted model whose provider keeps failing stops as failed with the provider's
error; `signoff runs resume ID`, in a new process configured by signoff.toml, goes on from the
same step, sends byte for byte the request that failed, and runs no tool again."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.helpers import clean_env

from bot.settings import load_settings
from bot.wiring import assemble
from runtime import Agent
from runtime import Budget
from runtime.models import OpenAIModel
from runtime.models import Price
from runtime.models.config import configure
from store import RunStatus
from store import open_store

from . import agents
from .fake_provider import KEY
from .fake_provider import Failure
from .fake_provider import FakeProvider
from .fake_provider import Turn

ROOT = Path(__file__).parent.parent.parent
_BESIDE_PYTHON = Path(sys.executable).with_name("signoff")
SIGNOFF = str(_BESIDE_PYTHON) if _BESIDE_PYTHON.exists() else shutil.which("signoff") or "signoff"
PRICE = Price(input_per_mtok=1.0, output_per_mtok=2.0)
MODEL = {"openai": "gpt-5.5", "anthropic": "claude-sonnet-5"}


def config(tmp_path: Path, kind: str, url: str, lease_ttl: float = 30) -> Path:
    path = tmp_path / "signoff.toml"
    path.write_text(
        f'database_url = "sqlite:///{tmp_path / "runs.db"}"\n'
        f"lease_ttl = {lease_ttl}\n"
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


async def signoff(
    tmp_path: Path, config_path: Path, log: Path, *args: str
) -> asyncio.subprocess.Process:
    """`signoff ARGS` in a process of its own, configured by the test's signoff.toml."""
    env = clean_env("SIGNOFF_", "SLACK_")
    env |= {
        "SIGNOFF_CONFIG": str(config_path),
        "SIGNOFF_TEST_TOOL_LOG": str(log),
        "PYTHONPATH": str(ROOT),
        "OPENAI_API_KEY": KEY,
        "ANTHROPIC_API_KEY": KEY,
    }
    return await asyncio.create_subprocess_exec(
        SIGNOFF,
        *args,
        env=env,
        cwd=tmp_path,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


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
    resume = await signoff(tmp_path, path, log, "runs", "resume", run_id)
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


async def test_a_process_killed_while_the_model_thinks_is_resumed_with_the_same_request(
    kind: str, serve: Callable[..., Any], tmp_path: Path
) -> None:
    log = tmp_path / "tools.jsonl"
    fake, url = await serve(lambda body: Turn())
    fake.brain = stall_after_first_answer(fake)
    path = config(tmp_path, kind, url, lease_ttl=1)

    start = ("runs", "start", "shipper", "Ship 42.", "--run-id", "r1")
    first = await signoff(tmp_path, path, log, *start)
    try:
        await wait_for(lambda: len(fake.seen) == 2)  # the second call is in flight
    finally:
        first.kill()  # SIGKILL: no clean-up of any kind
        await first.wait()
    await asyncio.sleep(1.2)  # its lease expires
    assert fake.stalled is not None
    fake.stalled.set()
    fake.stalled = None
    again = await signoff(tmp_path, path, log, "runs", "resume", "r1")
    _out, err = await asyncio.wait_for(again.communicate(), 60)

    assert again.returncode == 0, err.decode()
    async with open_store(f"sqlite:///{tmp_path / 'runs.db'}") as store:
        run = await store.get_run("r1")
    assert (run.status, run.step) == (RunStatus.DONE, 2)
    assert [json.loads(line) for line in log.read_text().splitlines()] == [["ship", "42"]]
    killed, resumed = fake.seen[1], fake.seen[2]
    assert len(fake.seen) == 3
    assert resumed.body == killed.body  # byte for byte, rebuilt from the checkpoints


def stall_after_first_answer(fake: FakeProvider) -> Callable[[dict[str, Any]], Turn]:
    def brain(body: dict[str, Any]) -> Turn:
        if not any(m["role"] == "assistant" for m in body["messages"]):
            fake.stalled = asyncio.Event()
            return Turn(calls=(("ship", {"order_id": "42"}),))
        return Turn(text="Shipped order 42.")

    return brain


async def wait_for(check: Callable[[], bool], within: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("timed out waiting")
        await asyncio.sleep(0.02)


def test_a_model_configured_for_an_agent_replaces_the_one_in_code(tmp_path: Path) -> None:
    settings = load_settings(config(tmp_path, "openai", "http://127.0.0.1:9/v1"))

    [agent] = configure([agents.agent], settings.runtime.models, settings.runtime.prices)

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
