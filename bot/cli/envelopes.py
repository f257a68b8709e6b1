"""`signoff envelopes create|list|confirm|revoke`: budgets an approver hands out (calls like
these approved at once, up to an amount and/or a number of calls, until a time). Each acts
through `Runtime.spend`, under the same checks as Slack and the HTTP API."""

from typing import TYPE_CHECKING
from typing import Annotated

import typer

from bot.cli.base import JsonFlag
from bot.cli.base import check_user_id
from bot.cli.base import checked_as_api
from bot.cli.base import group
from bot.cli.base import show
from bot.cli.session import with_process

if TYPE_CHECKING:
    from bot.wiring import Process
    from runtime.records import Envelope

envelopes = group("Budgets approvers hand out: calls like these approved at once, up to a sum.")
By = Annotated[str, typer.Option(help="Slack user id of who acts (an approver or rule-writer).")]


@envelopes.command("create")
def create(
    ctx: typer.Context,
    tool: Annotated[str, typer.Argument(metavar="TOOL")],
    when: Annotated[str, typer.Option(help="CEL: the calls it approves.")],
    by: By,
    reason: Annotated[str, typer.Option(help="Why these calls need no one.")],
    up_to: Annotated[
        str | None, typer.Option(help="The amount, in the tool's currency (2000 = $2,000).")
    ] = None,
    calls: Annotated[int | None, typer.Option(min=1, help="The number of calls.")] = None,
    until: Annotated[
        str | None, typer.Option(help="18:00 (UTC, the next one) or a duration (8h).")
    ] = None,
    amount: Annotated[
        str | None, typer.Option(help="CEL: what a call uses (default: its money argument).")
    ] = None,
    channel: Annotated[str | None, typer.Option(help="Where its live message goes.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Hand out a budget: calls of TOOL for which --when holds are approved at once while
    they fit --up-to and --calls, until --until (or [envelopes] default_expiry)."""
    from bot.requests import EnvelopeRequest

    check_user_id("--by", by)
    flags = {"when": "--when", "reason": "--reason", "channel": "--channel", "tool": "TOOL"}
    checked_as_api(
        EnvelopeRequest, flags, tool=tool, when=when, by=by, reason=reason, channel=channel
    )

    async def work(p: "Process") -> "tuple[Envelope, str]":
        from runtime import spend as budgets

        spend = p.runtime.spend
        counted = amount or spend.money_arg(tool)
        made = await spend.make(
            tool,
            when,
            author=by,
            reason=reason,
            max_amount=budgets.budget(up_to, spend.currency(tool, counted)) if up_to else None,
            max_calls=calls,
            amount=counted,
            expires_in=budgets.lasting(until, p.runtime.clock()) if until else None,
            channel=channel,
        )
        return made, _line(p, made)

    made, line = with_process(ctx, work)
    if made.state == "proposed":
        line += f"\na second writer confirms it: signoff envelopes confirm {made.id} --by …"
    show(made.model_dump(mode="json"), as_json=as_json, table=line)


@envelopes.command("list")
def list_envelopes(
    ctx: typer.Context,
    tool: Annotated[str | None, typer.Option(help="Only this tool's.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Budgets handed out, newest first, with what is used of each."""

    async def work(p: "Process") -> "list[tuple[Envelope, str]]":
        return [(e, _line(p, e)) for e in await p.runtime.spend.list(tool=tool)]

    found = with_process(ctx, work)
    rows = [e.model_dump(mode="json") | {"line": line} for e, line in found]
    show(rows, as_json=as_json, table="\n".join(line for _, line in found) or "no envelopes")


def _change(name: str, help: str) -> None:
    @envelopes.command(name, help=help)
    def command(
        ctx: typer.Context,
        envelope_id: Annotated[str, typer.Argument(metavar="ENVELOPE")],
        by: By,
        as_json: JsonFlag = False,
    ) -> None:
        check_user_id("--by", by)

        async def work(p: "Process") -> "tuple[Envelope, str]":
            spend = p.runtime.spend
            act = spend.confirm if name == "confirm" else spend.revoke
            changed = await act(envelope_id, by=by)
            return changed, _line(p, changed)

        changed, line = with_process(ctx, work)
        show(changed.model_dump(mode="json"), as_json=as_json, table=line)


_change("confirm", "A second writer's confirmation of a budget for an effect nothing undoes.")
_change("revoke", "End a budget now (its author or a rule-writer); calls like these ask again.")


def _line(p: "Process", envelope: "Envelope") -> str:
    from runtime import spend

    currency = p.runtime.spend.currency(envelope.tool, envelope.amount)
    return spend.envelope_line(envelope, currency, p.runtime.clock())
