"""The start-up check of `[limits]`: what the file's own validation cannot know. Each limit
counts tools that are registered and have effects, its key and amount name only what those
tools' calls have (CEL, checked like the rules' conditions), and the policy it asks under
exists. A problem stops `serve` (and `policy check`) with the line it is on."""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping

from runtime import errors
from runtime.agent import Agent
from runtime.approvals import Policies
from runtime.errors import Loc
from runtime.spend.config import ALL
from runtime.spend.config import LimitConfig


def check_limits(
    limits: Mapping[str, LimitConfig], policies: Policies, agents: Iterable[Agent]
) -> None:
    """Refuse limits that cannot count what they say (`RuleError` with every problem)."""
    if not limits:
        return
    problems = limit_problems(limits, policies, list(agents))
    if problems:
        raise errors.RuleError.of(problems)


def limit_problems(
    limits: Mapping[str, LimitConfig], policies: Policies, agents: list[Agent]
) -> list[tuple[Loc, str]]:
    from runtime.approvals import check_rule
    from runtime.approvals import tool_arg_types

    tools = {name: t for agent in agents for name, t in agent.tools.items()}
    found: list[tuple[Loc, str]] = []
    for name, limit in limits.items():
        loc = ("limits", name)
        if limit.ask is not None and limit.ask != "default" and limit.ask not in policies.tools:
            named = ", ".join(["default", *policies.tools])
            found.append(((*loc, "ask"), f"no policy {limit.ask!r} (the policies: {named})"))
        for tool_name in limit.tools:
            tool = tools.get(tool_name)
            if tool is None:
                if agents:
                    found.append(((*loc, "tools"), f"no configured agent has a tool {tool_name!r}"))
                continue
            if not tool.mutating:
                found.append(((*loc, "tools"), f"{tool_name} only reads: a limit counts effects"))
                continue
            types = tool_arg_types(tool)
            for field in ("key", "amount"):
                expression = getattr(limit, field)
                if expression == ALL or expression.isdigit():
                    continue
                found += [((*loc, field), p) for p in check_rule(expression, tool_name, types)]
    return found


def counted(limits: Mapping[str, LimitConfig]) -> dict[str, tuple[str, ...]]:
    """Each limit's name and the tools it counts (what the rules' check needs)."""
    return {name: limit.tools for name, limit in limits.items()}
