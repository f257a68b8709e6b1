"""`signoff approvals cancel-cool-off` and `signoff approvals undo` (issue 42.6): an approver
takes back what an approval let through, under the same permission table as Slack and the
API (the CLI is the operator, acting for the person `--by` names). Too late is exit 1 with
why, and nothing changes."""

from typing import TYPE_CHECKING
from typing import Annotated
from typing import Any

import typer

from bot.cli.approvals import approvals
from bot.cli.base import JsonFlag
from bot.cli.base import check_user_id
from bot.cli.base import say
from bot.cli.base import show
from bot.cli.session import with_process

if TYPE_CHECKING:
    from bot.wiring import Process
    from runtime import Permission
    from runtime import Runtime
    from runtime.records import Approval

ApprovalId = Annotated[str, typer.Argument(metavar="APPROVAL", help="The approval's id.")]
By = Annotated[str, typer.Option(help="Slack user id of the approver who acts.")]


@approvals.command("cancel-cool-off")
def cancel_cool_off(
    ctx: typer.Context, approval_id: ApprovalId, by: By, as_json: JsonFlag = False
) -> None:
    """Cancel an approved call still in its cool-off: it never runs; its run goes on (here, if
    its agent is loaded here) with the cancel as the call's result."""
    check_user_id("--by", by)

    async def work(p: "Process") -> Any:
        from runtime import Permission

        rt = p.runtime
        found = await _allowed(rt, approval_id, by, Permission.CANCEL_COOL_OFF)
        loaded = found.run_id is not None and (await rt.get(found.run_id)).agent in rt.agents
        cancelled = await rt.cancel_cool_off(approval_id, by=by, resume=loaded)
        run = await rt.get(found.run_id) if found.run_id is not None else None
        return cancelled, run, loaded

    cancelled, run, loaded = with_process(ctx, work)
    from bot import views
    from bot import words

    show(
        cancelled.shown().model_dump(mode="json"),
        as_json=as_json,
        table=views.approvals_table([cancelled], {}),
    )
    if not as_json and run is not None:
        after = (
            f"run {run.id} is now {views.run_status(run)} at step {run.step}"
            if loaded
            else f"run {run.id} goes on without it: {words.how_to_resume(run.id, run.agent)}"
        )
        say(views.inert(f"the call never runs; {after}"))


@approvals.command("undo")
def undo(ctx: typer.Context, approval_id: ApprovalId, by: By, as_json: JsonFlag = False) -> None:
    """Undo the call an approval let run, through its tool's compensator, once and within
    its policy's undo_for (the rollback of that one effect; the agent must be loaded here)."""
    check_user_id("--by", by)

    async def work(p: "Process") -> Any:
        from runtime import Permission

        rt = p.runtime
        await _allowed(rt, approval_id, by, Permission.UNDO)
        report = await rt.undo(approval_id, by=by)
        after = await rt.queries.approval(approval_id)
        return report, await rt.queries.effects(report.run_id), after.undo_error

    report, effects, failed = with_process(ctx, work)
    from bot import views

    data = report.as_dict()
    table = views.rollback_table(data, effects)
    title = f"undo of approval {approval_id} by {views.person(by)} FAILED" if failed else None
    table.title = title or f"approval {approval_id} undone by {views.person(by)}"
    show(data, as_json=as_json, table=table)
    if failed:  # the compensator failed: on-call was paged, and the undo may be tried again
        line = f"error: approval {approval_id} is not undone: {failed} (undo it again once fixed)"
        typer.echo(views.inert(line).plain, err=True)
        raise typer.Exit(1)


async def _allowed(
    rt: "Runtime", approval_id: str, by: str, permission: "Permission"
) -> "Approval":
    """The approval, once the permission table lets the operator acting for `by` do
    `permission` to it; raises otherwise."""
    from runtime.permissions import OPERATOR

    found = await rt.queries.approval(approval_id)
    await rt.check(OPERATOR.acting_for(by), permission, found)
    return found
