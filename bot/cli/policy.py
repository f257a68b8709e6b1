"""`signoff policy check TOOL '{args}'`: which approval rule a call matches and what would
happen, from the configuration alone. It opens no database and creates nothing, so a team
can test its policy file in CI (`--expect` makes a surprise exit non-zero)."""

import json
from typing import TYPE_CHECKING
from typing import Annotated
from typing import Any

import typer

from bot.cli.base import Failure
from bot.cli.base import JsonFlag
from bot.cli.base import check_user_id
from bot.cli.base import edited_args
from bot.cli.base import group
from bot.cli.base import say
from bot.cli.base import show
from bot.cli.session import load
from bot.cli.session import refusals

if TYPE_CHECKING:
    from bot.settings import Settings
    from runtime.approvals import Route
    from runtime.tools import Tool

policy = group("Approval policies: which rule a call matches, and what would happen.")
EXPECTED = ("ask", "auto_approve", "deny", "run")


@policy.command("check")
def check(
    ctx: typer.Context,
    tool: Annotated[str, typer.Argument(metavar="TOOL", help="The tool's name.")],
    args: Annotated[str, typer.Argument(metavar="ARGS", help="Its arguments, a JSON object.")],
    requested_by: Annotated[
        str | None, typer.Option("--requested-by", help="Slack user id of who asks.")
    ] = None,
    expect: Annotated[
        str | None,
        typer.Option(metavar="ACTION", help="ask, auto_approve, deny or run: exit 1 if otherwise."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Which rule a call matches and what would happen; creates nothing."""
    arguments = edited_args(args, flag="ARGS") or {}
    if requested_by is not None:
        check_user_id("--requested-by", requested_by)
    if expect is not None and expect not in EXPECTED:
        raise Failure(f"--expect: one of {', '.join(EXPECTED)}, not {expect!r}")
    with refusals():
        settings = load(ctx)
        report = _check(settings, tool, arguments, requested_by)
    show(report, as_json=as_json, table="\n".join(_lines(report)))
    if expect is not None and report["action"] != expect:
        say(f"expected {expect}, but the call would {report['action']}")
        raise typer.Exit(1)


def _check(
    settings: "Settings", tool: str, args: dict[str, Any], requested_by: str | None
) -> dict[str, Any]:
    """Check every rule as `serve` does at start-up, then route this one call, with its
    arguments as the rules see them (checked by the tool, defaults filled)."""
    from bot.agents import check_channel_ids
    from bot.agents import check_configured_rules
    from bot.agents import load_agents
    from bot.agents import unguarded_warnings
    from bot.near import did_you_mean
    from runtime.approvals import Facts
    from runtime.approvals import route
    from runtime.records import utcnow
    from runtime.tools import ToolArgumentError

    agents = load_agents(settings.runtime.agents, settings=settings)
    check_configured_rules(settings, agents)
    check_channel_ids(settings)
    for warning in unguarded_warnings(settings, agents):
        typer.echo(f"warning: {warning}", err=True)
    found = next((a.tools[tool] for a in agents if tool in a.tools), None)
    if found is None and agents and tool not in settings.runtime.policies.tools:  # a typo, likely
        known = sorted({name for a in agents for name in a.tools})
        raise Failure(
            f"no configured agent has a tool {tool!r} and no policy names it"
            f"{did_you_mean(tool, known)}; the tools are: {', '.join(known)}"
        )
    if found is not None:
        try:
            args = found.validate(args)
        except ToolArgumentError as exc:
            raise Failure(f"ARGS: {exc}") from None
    name, chosen = settings.runtime.policies.for_tool(tool)
    facts = Facts(requested_by=requested_by or "", now=utcnow())
    routed = route(name, chosen, tool, args, facts)
    return _report(tool, args, routed, found)


def _report(
    tool: str, args: dict[str, Any], routed: "Route", found: "Tool | None"
) -> dict[str, Any]:
    from runtime.approvals import policy_snapshot

    needs_approval = found is None or found.requires_approval
    return {
        "tool": tool,
        "args": args,
        "known_tool": found is not None,
        "needs_approval": needs_approval,
        "action": routed.action if needs_approval else "run",
        "rule": routed.match.model_dump(mode="json") if routed.match else None,
        "policy": policy_snapshot(routed.policy),
    }


def _lines(report: dict[str, Any]) -> list[str]:
    rule = report["rule"]
    policy = report["policy"]
    lines = [f"{report['tool']} {json.dumps(report['args'], ensure_ascii=False)}"]
    if not report["known_tool"]:
        lines.append("no configured agent has this tool: its arguments were not checked")
    if not report["needs_approval"]:
        return [*lines, "would: run without asking: the tool needs no approval (rules not used)"]
    lines.append(f"matches: {rule['summary'] if rule else 'the tool has no rules'}")
    if rule:
        lines.append(f"because: {_because(rule)}")
    would = {
        "auto_approve": "run at once, approved by the rule (audited)",
        "deny": f"be declined at once; the model is told: {rule and rule.get('deny')}",
        "ask": _asks(policy),
    }[report["action"]]
    lines.append(f"would: {would}")
    return lines


def _because(rule: dict[str, Any]) -> str:
    if rule["kind"] == "no_match":
        return "no rule's condition holds for this call"
    earlier = rule["number"] - 1
    before = f"; rules 1-{earlier} did not hold" if earlier > 1 else ""
    before = "; rule 1 did not hold" if earlier == 1 else before
    if rule["kind"] == "error":
        return f"`{rule['when']}` failed while it ran ({rule['error']}){before}"
    return f"`{rule['when']}` holds{before}"


def _asks(policy: dict[str, Any]) -> str:
    who = ", ".join(policy["approvers"]) or "anyone but the requester"
    parts = [f"ask {who} for {policy['required_approvals']} approval(s)"]
    if policy["channel"]:
        parts.append(f"in {policy['channel']}")
    if policy["timeout"]:
        then = "escalated" if policy["on_timeout"] == "escalate" else "declined as expired"
        parts.append(f"({then} after {_duration(policy['timeout'])})")
    return " ".join(parts)


def _duration(seconds: float) -> str:
    """`1d`, `4h`, `90m`, `45s`: the largest unit that divides it, as signoff.toml writes it."""
    whole = int(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if whole >= size and whole % size == 0:
            return f"{whole // size}{unit}"
    return f"{whole}s"
