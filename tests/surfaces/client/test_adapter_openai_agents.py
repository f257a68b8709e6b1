"""The OpenAI Agents SDK with Signoff as its approver: a real `Agent` whose tool has
`needs_approval=True`, on a scripted `Model` (no network, tracing off); interruptions become
Signoff approvals, the paused `RunState` is kept as text and resumed from it (as another
process would) with `approve` / `reject(rejection_message=...)`."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agents import Agent
from agents import Runner
from agents import function_tool
from support.adapter_support import approve
from support.adapter_support import approve_with
from support.adapter_support import client_of
from support.adapter_support import decline
from support.adapter_support import human
from support.helpers import AUTH
from support.helpers import TOKEN
from support.helpers import Api
from support.openai_agents_support import Calls
from support.openai_agents_support import no_tracing  # noqa: F401 (autouse)

from runtime import Policies
from runtime import Policy
from signoff.adapters._gate import Gate
from signoff.adapters.openai_agents import resume_signed_off
from signoff.adapters.openai_agents import resume_when_decided
from signoff.adapters.openai_agents import run_signed_off
from signoff.errors import ApiError
from signoff.errors import SignoffError
from store.limits import MAX_RESUME_STATE

ROOT = Path(__file__).resolve().parents[3]

MakeApi = Callable[..., Awaitable[Api]]


def scripted() -> Calls:
    """Calls `refund` until a tool output is in the input; then says what came back."""
    return Calls("refund", {"order": "4471", "cents": 500})


def refund_agent(done: list[tuple[str, int]]) -> Agent[Any]:
    @function_tool(needs_approval=True)
    def refund(order: str, cents: int) -> str:
        """Refund an order."""
        done.append((order, cents))
        return f"refunded {cents} on {order}"

    return Agent(name="refunds", instructions="Refund orders.", tools=[refund], model=scripted())


@pytest.fixture
async def api(make_api: MakeApi) -> Api:
    return await make_api(policies=Policies(default=Policy(allow_edit=True)))


async def test_an_approved_call_runs_and_the_paused_state_was_handed_out(api: Api) -> None:
    done: list[tuple[str, int]] = []
    kept: list[tuple[str, str]] = []

    async def keep(run_key: str, state: str) -> None:
        kept.append((run_key, state))

    async with client_of(api) as signoff, human(api, approve) as decided:
        result = await run_signed_off(
            refund_agent(done), "Refund 4471", gate=Gate(signoff), run_key="r1", on_pause=keep
        )
    assert result.final_output == "outcome: refunded 500 on 4471"
    assert done == [("4471", 500)]
    [approval] = decided
    assert (approval.id, approval.tool, approval.args) == (
        "oa_r1:call_1",
        "refund",
        {"order": "4471", "cents": 500},
    )
    assert [key for key, _ in kept] == ["r1"]


async def test_a_declined_call_never_runs_and_the_model_reads_why(api: Api) -> None:
    done: list[tuple[str, int]] = []
    async with client_of(api) as signoff, human(api, decline("fraud risk")):
        result = await run_signed_off(
            refund_agent(done), "Refund 4471", gate=Gate(signoff), run_key="r1"
        )
    assert "declined refund: fraud risk" in result.final_output
    assert done == []


async def test_an_edit_is_a_rejection_naming_the_approved_arguments(api: Api) -> None:
    done: list[tuple[str, int]] = []
    async with client_of(api) as signoff, human(api, approve_with(cents=50)):
        result = await run_signed_off(
            refund_agent(done), "Refund 4471", gate=Gate(signoff), run_key="r1"
        )
    assert "only with these arguments" in result.final_output
    assert "'cents': 50" in result.final_output
    assert done == []


async def test_a_run_paused_in_one_process_resumes_in_another_from_its_text(api: Api) -> None:
    done: list[tuple[str, int]] = []
    paused = await Runner.run(refund_agent(done), "Refund 4471")
    text = paused.to_state().to_string()
    async with client_of(api) as signoff:
        timed_out = await resume_signed_off(
            refund_agent(done), text, gate=Gate(signoff, timeout=0.3), run_key="r1"
        )
        assert "nobody approved refund in time" in timed_out.final_output
        assert done == []
    done_later: list[tuple[str, int]] = []
    paused = await Runner.run(refund_agent(done_later), "Refund 4471")
    text = paused.to_state().to_string()
    async with client_of(api) as signoff, human(api, approve):
        result = await resume_signed_off(
            refund_agent(done_later), text, gate=Gate(signoff), run_key="r2"
        )
    assert result.final_output == "outcome: refunded 500 on 4471"
    assert done_later == [("4471", 500)]


async def _process(api: Api, done: Path, *argv: str) -> dict[str, Any]:
    """`tests.support.oa_process` in a fresh interpreter: what it printed."""
    env = dict(os.environ) | {
        "SIGNOFF_URL": str(api.client.make_url("")).rstrip("/"),
        "SIGNOFF_API_TOKEN": TOKEN,
        "OA_DONE": str(done),
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.support.oa_process",
        *argv,
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()[-2000:]
    parsed: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    return parsed


def _refunds(done: Path) -> list[list[Any]]:
    return [json.loads(line) for line in done.read_text().splitlines()] if done.exists() else []


async def test_the_paused_state_is_kept_with_the_approval_and_a_fresh_process_resumes(
    api: Api, tmp_path: Path
) -> None:
    done = tmp_path / "done.jsonl"
    asked = await _process(api, done, "ask", "r-fresh")
    assert asked == {"paused": ["oa_r-fresh:call_1"]}
    [pending] = await api.rt.approvals(state="pending")
    assert (pending.id, pending.tool) == ("oa_r-fresh:call_1", "refund_order")
    kept = pending.resume_state
    assert kept
    assert json.loads(kept)["current_turn"] >= 1
    assert "resume_state" not in repr(pending)
    assert "resume_state" not in pending.model_dump()

    async with client_of(api) as signoff:
        read = await signoff.get(pending.id)
        assert read.resume_state == kept  # whole, as the asker gave it
        [listed] = (await signoff.approvals(state="pending")).approvals
        assert listed.resume_state is None  # lists stay small
    audit = await api.client.get(f"/v1/audit?approval_id={pending.id}", headers=AUTH)
    assert (await audit.json())["events"]
    assert "Refund order 4471" in kept  # the task, in the transcript the state holds
    assert "Refund order 4471" not in await audit.text()  # the audit shows no one the state
    await api.rt.decide(pending.id, "approved", by="U0BOSS")
    resumed = await _process(api, done, "resume", "r-fresh", pending.id)
    assert resumed == {"final": "Done. The tool said: refunded 2500 cents on order 4471"}
    assert _refunds(done) == [["4471", 2500]]


async def test_a_decline_lands_and_the_fresh_process_tells_the_model_without_running_it(
    api: Api, tmp_path: Path
) -> None:
    done = tmp_path / "done.jsonl"
    [approval_id] = (await _process(api, done, "ask", "r-no"))["paused"]
    await api.rt.decide(approval_id, "declined", by="U0BOSS", reason="fraud risk")
    resumed = await _process(api, done, "resume", "r-no", approval_id)
    assert "declined refund_order: fraud risk" in resumed["final"]
    assert _refunds(done) == []


async def test_resume_state_is_size_limited_and_a_retry_keeps_the_first(api: Api) -> None:
    async with client_of(api) as signoff:
        with pytest.raises(ApiError) as refused:
            await signoff.request(
                "refund", {}, approval_id="big", resume_state="x" * (MAX_RESUME_STATE + 1)
            )
        assert refused.value.status == 400
        assert "resume_state" in refused.value.reason
        assert await api.rt.approvals(state="pending") == []
        first = await signoff.request("refund", {"o": 1}, approval_id="a1", resume_state="one")
        again = await signoff.request("refund", {"o": 1}, approval_id="a1", resume_state="two")
        assert first.id == again.id
        assert (await signoff.get("a1")).resume_state == "one"
        assert (await signoff.wait("a1", timeout=0.2)).resume_state == "one"
        await signoff.request("refund", {}, approval_id="plain")
        with pytest.raises(SignoffError, match="keeps no paused run"):
            await resume_when_decided(refund_agent([]), "plain", gate=Gate(signoff), run_key="p")
