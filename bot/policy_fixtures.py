"""`signoff policy test FILE`: fixtures for a policy file, for CI. Each case is a call with
the history before it, and what should happen to it: `ask`, `approve` (at once, by a rule or
an envelope), `deny`, or `run` (it needs no approval); optionally the policy it is asked
under and each limit's state after it (`used`, `left`).

A case runs the real engine on a fresh in-memory database: its history first (each past
call counted and settled as if it completed, `ago` before now, whatever the rules say),
then the call, through the file's policies, rules and limits, with the agents' tools
standing in (same names, arguments and classification; nothing is called). So a fixture
says what `serve` would do with that call after that history, and nothing else.

    [[calls]]
    name = "a third refund this month asks a lead"
    tool = "issue_refund"
    args = { customer_id = "c1", order_id = "o3", amount_cents = 20000 }
    history = [
      { tool = "issue_refund", args = { customer_id = "c1", order_id = "o1",
        amount_cents = 40000 }, ago = "3d" },
    ]
    expect = "ask"
    expect_policy = "refund_leads"
    expect_limits = { refunds_per_customer = { used = 60000, left = -10000 } }
"""

from __future__ import annotations

import copy
import json
import tomllib
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any
from typing import Literal

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import ValidationError

from bot.settings import ConfigError
from bot.settings import Settings
from runtime import Agent
from runtime import Policies
from runtime import ScriptedModel
from runtime import tool_call
from runtime.approvals import PositiveDuration
from runtime.database import Database
from runtime.records import ApprovalState
from runtime.records import utcnow
from runtime.spend import SpendConfig
from runtime.tools import Tool

Expect = Literal["ask", "approve", "deny", "run"]
ALL_APPROVED = Policies.model_validate(
    {"default": {"rules": [{"when": "true", "auto_approve": True}]}}
)
"""How history is made: every past call approved at once (it happened)."""


class Past(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    ago: PositiveDuration = timedelta(minutes=1)
    agent: str | None = None
    requested_by: str = "U0FIXTURE"


class Case(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    agent: str | None = None
    requested_by: str = "U0FIXTURE"
    history: list[Past] = Field(default_factory=list)
    expect: Expect
    expect_policy: str | None = None
    expect_limits: dict[str, dict[Literal["used", "left"], int]] = Field(default_factory=dict)


class Fixtures(BaseModel):
    model_config = ConfigDict(extra="forbid")

    calls: list[Case] = Field(min_length=1)


class Outcome(BaseModel):
    """What happened to a case's call, and the expectations it missed."""

    name: str
    got: Expect
    policy: str | None
    rule: str | None
    limits: dict[str, dict[str, int]]
    wrong: list[str]


def load(path: Path) -> Fixtures:
    try:
        return Fixtures.model_validate(tomllib.loads(path.read_text("utf-8")))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"{path}: {where}: {first['msg']}") from None


async def run_all(settings: Settings, agents: Sequence[Agent], fixtures: Fixtures) -> list[Outcome]:
    stand_ins = [_stand_in(agent) for agent in agents]
    return [await run_case(settings, stand_ins, case) for case in fixtures.calls]


async def run_case(settings: Settings, agents: Sequence[Agent], case: Case) -> Outcome:
    now = utcnow()
    moment = [now]
    clock = lambda: moment[0]  # noqa: E731 - the store and runtime read the case's time
    limits = settings.runtime.limits
    past_limits = {
        name: limit.model_copy(update={"mode": "shadow", "ask": "default", "deny": None})
        for name, limit in limits.items()
    }
    database = await Database.open("sqlite://:memory:", clock=clock)
    try:
        history = database.runtime(
            agents,
            policies=ALL_APPROVED,
            clock=clock,
            spend=SpendConfig(limits=past_limits),
        )
        for i, past in enumerate(sorted(case.history, key=lambda p: -p.ago.total_seconds())):
            moment[0] = now - past.ago
            agent = _agent_for(agents, past.tool, past.agent)
            task = _task(past.tool, past.args)
            await history.start(agent, task, run_id=f"past-{i}", requested_by=past.requested_by)
        moment[0] = now
        rt = database.runtime(
            agents,
            policies=settings.runtime.policies,
            clock=clock,
            spend=settings.runtime.spend,
            learned_rules=settings.runtime.learned_rules,
        )
        agent = _agent_for(agents, case.tool, case.agent)
        run_id = await rt.start(
            agent, _task(case.tool, case.args), run_id="case", requested_by=case.requested_by
        )
        approvals = await rt.approvals(run_id)
    finally:
        await database.close()
    return _outcome(case, approvals[0] if approvals else None)


def _outcome(case: Case, approval: Any) -> Outcome:
    if approval is None:
        got: Expect = "run"
    else:
        said: dict[str, Expect] = {
            ApprovalState.PENDING: "ask",
            ApprovalState.APPROVED: "approve",
            ApprovalState.DECLINED: "deny",
        }
        got = said[approval.state]
    match = approval.rule if approval is not None else None
    states = {s.name: {"used": s.after, "left": s.left} for s in (match.limits if match else ())}
    wrong = []
    if got != case.expect:
        wrong.append(f"expected {case.expect}, got {got}")
    policy = approval.policy if approval is not None else None
    if case.expect_policy is not None and policy != case.expect_policy:
        wrong.append(f"expected policy {case.expect_policy}, got {policy}")
    for name, expected in case.expect_limits.items():
        found = states.get(name)
        if found is None:
            wrong.append(f"expected limit {name} to count the call; it did not")
            continue
        for key, value in expected.items():
            if found[key] != value:
                wrong.append(f"expected {name}.{key} = {value}, got {found[key]}")
    return Outcome(
        name=case.name,
        got=got,
        policy=policy,
        rule=match.summary if match else None,
        limits=states,
        wrong=wrong,
    )


def _stand_in(agent: Agent) -> Agent:
    """The agent with its tools standing in: the same definitions, and a body that does
    nothing; a model that makes the task's one call."""
    tools = []
    for tool in agent.tools.values():
        double: Tool = copy.copy(tool)
        double.fn = _nothing
        double.on_loop = True
        double.context = None
        tools.append(double)
    return Agent(agent.name, model=ScriptedModel([_call, "Done."]), tools=tools)


def _nothing(**_: Any) -> dict[str, Any]:
    return {}


def _call(messages: Sequence[Any]) -> Any:
    task = json.loads(next(m.content for m in messages if m.role == "user"))
    return tool_call(task["tool"], task["args"])


def _task(tool: str, args: dict[str, Any]) -> str:
    return json.dumps({"tool": tool, "args": args})


def _agent_for(agents: Sequence[Agent], tool: str, name: str | None) -> str:
    for agent in agents:
        if (name is None or agent.name == name) and tool in agent.tools:
            return agent.name
    raise ConfigError(f"no configured agent{f' {name}' if name else ''} has a tool {tool!r}")
