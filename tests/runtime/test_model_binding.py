"""Issue 25, point 4: a run resumes with the model it started on. The model and its settings
are recorded on the run; a process configured with another model refuses to resume it, with
a message naming both, and changes nothing, unless a person overrides (recorded on the run
and in the audit)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any

import pytest

from runtime import Agent
from runtime import Runtime
from runtime import ScriptedModel
from runtime import ToolContext
from runtime import errors
from runtime import tool
from runtime import tool_call
from runtime.models.openai import OpenAIModel


class Named(ScriptedModel):
    """A scripted model that says which model it stands for, as a hosted one does."""

    def __init__(self, name: str, replies: Sequence[Any]) -> None:
        super().__init__(list(replies))
        self.name = name

    def identity(self) -> dict[str, Any]:
        return {"class": "Named", "model": self.name, "max_tokens": 1024}


@tool(description="Pay.", effect="irreversible")
async def pay(cents: int, *, ctx: ToolContext) -> dict[str, Any]:
    return {"paid": cents}


def agent_on(model: str) -> Agent:
    replies: list[Any] = [tool_call("pay", {"cents": 100}), "Paid."]
    return Agent("payer", model=Named(model, replies), tools=[pay])


async def parked(make_runtime: Callable[..., Runtime]) -> tuple[Runtime, str]:
    rt = make_runtime([agent_on("model-a")])
    run_id = await rt.start("payer", "Pay 1.00", run_id="run-m", requested_by="U0REQ")
    [asked] = await rt.approvals(run_id)
    await rt.decide(asked.id, "approved", by="U0BOB", resume=False)
    return rt, run_id


async def test_the_run_records_its_model(make_runtime: Callable[..., Runtime]) -> None:
    rt, run_id = await parked(make_runtime)
    assert (await rt.get(run_id)).model == {
        "class": "Named",
        "model": "model-a",
        "max_tokens": 1024,
    }


async def test_resuming_on_another_model_is_refused_and_changes_nothing(
    make_runtime: Callable[..., Runtime], caplog: pytest.LogCaptureFixture
) -> None:
    _, run_id = await parked(make_runtime)
    other = make_runtime([agent_on("model-b")])

    with pytest.raises(errors.ModelChanged) as refused:
        await other.resume(run_id)

    said = str(refused.value)
    assert "run run-m started on class=Named, model=model-a, max_tokens=1024" in said
    assert "this process is configured with class=Named, model=model-b" in said
    assert "--override-model-by" in said
    run = await other.get(run_id)
    assert (run.status, run.model["model"]) == ("waiting_approval", "model-a")  # type: ignore[index]
    assert await other.store.list_effects(run_id) == []
    caplog.set_level(logging.WARNING, logger="signoff")
    assert await other.recover() == [run_id]  # tried, refused, logged: still parked
    assert "refused: run run-m started on" in caplog.text
    assert (await other.get(run_id)).status == "waiting_approval"


async def test_an_explicit_override_goes_on_with_the_new_model_and_is_audited(
    make_runtime: Callable[..., Runtime],
) -> None:
    _, run_id = await parked(make_runtime)
    other = make_runtime([agent_on("model-b")])

    run = await other.resume(run_id, override_model_by="U0OPS")

    assert (run.status, run.model["model"]) == ("done", "model-b")  # type: ignore[index]
    [event] = [
        e for e in await other.store.list_events(run_id=run_id) if e.action == "model_override"
    ]
    assert event.actor == "U0OPS"
    assert (event.detail["was"]["model"], event.detail["now"]["model"]) == ("model-a", "model-b")


def test_a_hosted_model_names_itself_by_model_and_settings() -> None:
    model = OpenAIModel("gpt-x", base_url="https://gw.internal", max_tokens=512)
    assert model.identity() == {
        "class": "OpenAIModel",
        "provider": "openai",
        "model": "gpt-x",
        "base_url": "https://gw.internal",
        "max_tokens": 512,
    }
