"""`signoff policy propose|add|confirm|revoke|list|export`: approval rules people make from
decisions ("approve + similar"), beside the file's. Each acts through `Runtime.rules`."""

from collections.abc import Awaitable
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Annotated
from typing import Any

import typer

from bot.cli.base import Failure
from bot.cli.base import JsonFlag
from bot.cli.base import check_user_id
from bot.cli.base import edited_args
from bot.cli.base import say
from bot.cli.base import show
from bot.cli.policy import policy
from bot.cli.session import with_process

if TYPE_CHECKING:
    from bot.wiring import Process
    from runtime.records import LearnedRule

By = Annotated[str, typer.Option(help="Slack user id of the rule-writer.")]


@policy.command("propose")
def propose(
    ctx: typer.Context,
    tool: Annotated[str, typer.Argument(metavar="TOOL")],
    args: Annotated[
        str | None, typer.Argument(metavar="ARGS", help="A call's arguments (JSON) to derive from.")
    ] = None,
    when: Annotated[str | None, typer.Option(help="The rule's CEL condition instead.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """The rule a call suggests and its backtest over the audit log; saves nothing."""
    arguments = _json_object(args) if args else {}
    if when is None and args is None:
        raise Failure("give ARGS (a call to derive the rule from) or --when")

    async def work(p: "Process") -> Any:
        return await p.runtime.rules.propose(tool, when, arguments)

    proposal = with_process(ctx, work)
    from bot.rule_views import backtest_lines

    report = {
        "tool": tool,
        "when": proposal.condition,
        "ceiling": proposal.ceiling,
        "needs_second": proposal.needs_second,
        "backtest": proposal.backtest.as_dict(),
    }
    lines = [f"when: {proposal.condition}", *backtest_lines(proposal.backtest)]
    if proposal.needs_second:
        lines.append("the effect cannot be compensated: a second rule-writer must confirm it")
    show(report, as_json=as_json, table="\n".join(lines))


@policy.command("add")
def add(
    ctx: typer.Context,
    tool: Annotated[str, typer.Argument(metavar="TOOL")],
    when: Annotated[str, typer.Argument(metavar="WHEN", help="The CEL condition.")],
    by: By,
    reason: Annotated[str, typer.Option(help="Why such calls need no one.")],
    expires: Annotated[str | None, typer.Option(help="e.g. 7d (at most the max).")] = None,
    from_approval: Annotated[str | None, typer.Option(help="The decision it grew from.")] = None,
    confirm_declined: Annotated[
        bool, typer.Option(help="Make it although it would have approved declined requests.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Make a rule that approves calls like these at once, until it expires."""
    from runtime.approvals import parse_duration

    check_user_id("--by", by)
    try:
        expiry = parse_duration(expires, unit_required=True) if expires else None
    except ValueError as exc:
        raise Failure(f"--expires: {exc}") from None

    async def work(p: "Process") -> Any:
        from runtime.approvals import NeedsConfirmation

        try:
            return await p.runtime.rules.make(
                tool,
                when,
                author=by,
                reason=reason,
                expires_in=expiry,
                from_approval=from_approval,
                confirm_declined=confirm_declined,
            )
        except NeedsConfirmation as exc:
            return exc

    made = with_process(ctx, work)
    if isinstance(made, Exception):
        _refuse_unconfirmed(made)
    rule, tested = made
    from bot.rule_views import backtest_lines

    text = [f"{rule.id} {rule.state}: {rule.condition}", *backtest_lines(tested)]
    if rule.state == "proposed":
        text.append(f"a second rule-writer confirms it: signoff policy confirm {rule.id} --by …")
    show(rule.model_dump(mode="json"), as_json=as_json, table="\n".join(text))


def _writer_command(
    name: str,
    help: str,
    change: "Callable[[Process, str, str], Awaitable[LearnedRule]]",
    said: "Callable[[LearnedRule], str]",
) -> None:
    """`signoff policy NAME RULE --by WRITER`: a rule-writer's change to a learned rule."""

    @policy.command(name, help=help)
    def command(
        ctx: typer.Context, rule_id: Annotated[str, typer.Argument(metavar="RULE")], by: By
    ) -> None:
        check_user_id("--by", by)
        say(said(with_process(ctx, lambda p: change(p, rule_id, by))))


_writer_command(
    "confirm",
    "A second rule-writer's confirmation of a rule for an uncompensatable effect.",
    lambda p, rule_id, by: p.runtime.rules.confirm(rule_id, by=by),
    lambda rule: f"{rule.id} active, confirmed by {rule.confirmed_by}",
)
_writer_command(
    "revoke",
    "Stop a learned rule now (it stays listed, revoked).",
    lambda p, rule_id, by: p.runtime.rules.revoke(rule_id, by=by),
    lambda rule: f"{rule.id} revoked by {rule.revoked_by} (it was used {rule.uses} times)",
)


@policy.command("list")
def list_rules(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """The file's rules and the learned ones, with author, expiry and uses."""
    from bot.rule_views import all_rules
    from bot.rule_views import rule_line

    async def work(p: "Process") -> Any:
        learned = await p.runtime.rules.list()
        return all_rules(p.settings.runtime.policies, learned, p.runtime.clock())

    rows = with_process(ctx, work, agents=False)
    show(rows, as_json=as_json, table="\n".join(map(rule_line, rows)) or "no rules")


@policy.command("export")
def export(
    ctx: typer.Context,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file.")
    ] = None,
) -> None:
    """The learned rules as TOML, for review in version control."""
    from runtime.approvals import learned_rules_toml

    async def work(p: "Process") -> str:
        return learned_rules_toml(await p.runtime.rules.list(), now=p.runtime.clock())

    text = with_process(ctx, work, agents=False)
    if output is None:
        typer.echo(text, nl=False)
    else:
        output.write_text(text, "utf-8")
        say(f"wrote {output}")


def _json_object(text: str) -> dict[str, Any]:
    return edited_args(text, flag="ARGS") or {}


def _refuse_unconfirmed(exc: Any) -> None:
    """A rule that needs `--confirm-declined` is refused, naming what it would have approved."""
    from bot.rule_views import backtest_lines

    lines = "\n".join(backtest_lines(exc.backtest))
    raise Failure(f"{exc}\n{lines}\n(add --confirm-declined to make it anyway)")
