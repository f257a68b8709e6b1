"""`signoff policy test FILE` (fixtures: calls with history and what should happen, for CI;
exit 1 naming each wrong expectation) and `signoff policy backtest` (the audit trail's
requests replayed through this configuration's rules: run it with `--config` of the changed
file; it lists what would have gone otherwise)."""

from pathlib import Path
from typing import TYPE_CHECKING
from typing import Annotated
from typing import Any

import typer

from bot.cli.base import JsonFlag
from bot.cli.base import say
from bot.cli.base import show
from bot.cli.policy import policy
from bot.cli.session import load
from bot.cli.session import refusals
from bot.cli.session import with_process

if TYPE_CHECKING:
    from bot.policy_fixtures import Outcome
    from bot.wiring import Process


@policy.command("test")
def run_fixtures(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(metavar="FILE", help="The fixtures (TOML).")],
    as_json: JsonFlag = False,
) -> None:
    """Run fixtures: each call after its history through the file's rules and limits, on a
    database of its own; exit 1 naming each wrong expectation."""
    import asyncio

    from bot import policy_fixtures
    from bot.agents import check_configured_rules
    from bot.agents import load_agents

    with refusals():
        settings = load(ctx)
        agents = load_agents(settings.runtime.agents)
        check_configured_rules(settings, agents)
        fixtures = policy_fixtures.load(file)
        outcomes = asyncio.run(policy_fixtures.run_all(settings, agents, fixtures))
    show(
        [o.model_dump() for o in outcomes],
        as_json=as_json,
        table="\n".join(_line(o) for o in outcomes),
    )
    wrong = [o for o in outcomes if o.wrong]
    if wrong:
        for outcome in wrong:
            typer.echo(f"{outcome.name}: {'; '.join(outcome.wrong)}", err=True)
        typer.echo(f"{len(wrong)} of {len(outcomes)} fixtures failed", err=True)
        raise typer.Exit(1)


def _line(outcome: "Outcome") -> str:
    mark = "FAIL" if outcome.wrong else "ok"
    policy = f" (policy {outcome.policy})" if outcome.got == "ask" else ""
    limits = "".join(
        f"; {name}: used {state['used']}, left {state['left']}"
        for name, state in outcome.limits.items()
    )
    return f"{mark:4} {outcome.name}: {outcome.got}{policy}{limits}"


@policy.command("backtest")
def backtest(
    ctx: typer.Context,
    tool: Annotated[
        list[str] | None, typer.Option(help="Only these tools (default: every tool).")
    ] = None,
    size: Annotated[
        int, typer.Option(min=1, max=100_000, help="The newest requests of each tool.")
    ] = 1000,
    as_json: JsonFlag = False,
) -> None:
    """Replay the audit trail's requests through this configuration's rules (`signoff
    --config changed.toml policy backtest`) and list what would have gone otherwise."""

    async def work(p: "Process") -> Any:
        rt = p.runtime
        names = tool or sorted(
            {*rt.policies.tools, *(t for a in rt.agents.values() for t in a.tools)}
        )
        return [await rt.rules.replay(rt.policies, name, size=size) for name in names]

    replays = with_process(ctx, work)
    changes = [c for r in replays for c in r.changes]
    replayed = sum(r.replayed for r in replays)
    summary = f"{len(changes)} of {replayed} requests would have gone otherwise"
    rows = [c.__dict__ | {"args": dict(c.args)} for c in changes]
    show(rows, as_json=as_json, table="\n".join([*(c.line() for c in changes), summary]))
    if not as_json:
        say("(rules only: limits and envelopes are as they were)")
