"""The OpenAI Agents SDK's local MCP servers with Signoff as their approver: a real
`MCPServerStdio` running the MCP server the proxy tests use (`mcp_downstream.py`, written
with the MCP SDK, which logs every call that changes something), `require_approval` naming
the tools that ask, and a scripted model. Each interruption becomes a Signoff approval; only
an approved call reaches the server."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from collections.abc import Awaitable
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agents import Agent
from agents.mcp import MCPServerStdio
from support import SUPPORT
from support.adapter_support import approve
from support.adapter_support import client_of
from support.adapter_support import decline
from support.adapter_support import human
from support.helpers import Api
from support.openai_agents_support import Calls
from support.openai_agents_support import no_tracing  # noqa: F401 (autouse)

from signoff.adapters._gate import Gate
from signoff.adapters.openai_agents import run_signed_off

DOWNSTREAM = SUPPORT / "mcp_downstream.py"
MakeApi = Callable[..., Awaitable[Api]]


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "downstream.jsonl"


@pytest.fixture
async def files(log: Path) -> AsyncIterator[MCPServerStdio]:
    """The local MCP server; its changing tools ask, `read_file` does not."""
    params = {
        "command": sys.executable,
        "args": [str(DOWNSTREAM)],
        "env": dict(os.environ) | {"DOWNSTREAM_LOG": str(log)},
    }
    ask = {"always": {"tool_names": ["delete_file", "transfer"]}}
    async with MCPServerStdio(params=params, require_approval=ask) as server:  # type: ignore[arg-type]
        yield server


def touched(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def agent_calling(server: MCPServerStdio, tool: str, **args: Any) -> Agent[Any]:
    return Agent(
        name="files", instructions="Tidy up.", mcp_servers=[server], model=Calls(tool, args)
    )


async def test_an_approved_mcp_call_reaches_the_server_once(
    api: Api, files: MCPServerStdio, log: Path
) -> None:
    agent = agent_calling(files, "delete_file", path="/srv/old.log")
    async with client_of(api) as signoff, human(api, approve) as decided:
        result = await run_signed_off(agent, "Tidy", gate=Gate(signoff), run_key="mcp1")
    assert "deleted /srv/old.log" in result.final_output
    assert touched(log) == [{"tool": "delete_file", "path": "/srv/old.log"}]
    [approval] = decided
    assert (approval.id, approval.tool, approval.args) == (
        "oa_mcp1:call_1",
        "delete_file",
        {"path": "/srv/old.log"},
    )


async def test_a_declined_mcp_call_never_reaches_the_server_and_the_model_reads_why(
    api: Api, files: MCPServerStdio, log: Path
) -> None:
    agent = agent_calling(files, "transfer", to="mallory", amount=900)
    async with client_of(api) as signoff, human(api, decline("not our vendor")):
        result = await run_signed_off(agent, "Pay", gate=Gate(signoff), run_key="mcp2")
    assert "declined transfer: not our vendor" in result.final_output
    assert touched(log) == []


async def test_nobody_deciding_in_time_never_reaches_the_server(
    api: Api, files: MCPServerStdio, log: Path
) -> None:
    agent = agent_calling(files, "delete_file", path="/srv/db")
    async with client_of(api) as signoff:
        result = await run_signed_off(
            agent, "Tidy", gate=Gate(signoff, timeout=0.3), run_key="mcp3"
        )
    assert "nobody approved delete_file in time" in result.final_output
    assert touched(log) == []
    [pending] = await api.rt.approvals(state="pending")
    assert pending.id == "oa_mcp3:call_1"


async def test_a_tool_the_server_does_not_gate_runs_without_asking(
    api: Api, files: MCPServerStdio
) -> None:
    agent = agent_calling(files, "read_file", path="/etc/motd")
    async with client_of(api) as signoff:
        result = await run_signed_off(agent, "Read", gate=Gate(signoff), run_key="mcp4")
    assert "contents of /etc/motd" in result.final_output
    assert await api.rt.approvals() == []
