"""`signoff approvals ...`: what waits for a human (with its arguments), and deciding it.

A decision is the human's: it is recorded first. The run it unblocks resumes in this
process only if the run's agent is loaded here; otherwise the command says where it will
resume (`signoff serve` recovers it, or `signoff runs resume`).
"""

from itertools import chain
from typing import TYPE_CHECKING
from typing import Annotated
from typing import Any

import typer

from bot.cli import people
from bot.cli.base import Failure
from bot.cli.base import JsonFlag
from bot.cli.base import check_user_id
from bot.cli.base import checked_as_api
from bot.cli.base import dumped
from bot.cli.base import edited_args
from bot.cli.base import group
from bot.cli.base import say
from bot.cli.base import show
from bot.cli.session import Reader
from bot.cli.session import database_label
from bot.cli.session import with_process
from bot.cli.session import with_reader

if TYPE_CHECKING:
    from bot.wiring import Process
    from runtime import Decision
    from runtime import Runtime
    from runtime.records import Approval
    from runtime.records import Run

approvals = group("Approvals, pending and decided.")
DECISIONS: "dict[str, Decision]" = {
    "approve": "approved",
    "approved": "approved",
    "decline": "declined",
    "declined": "declined",
    "ask": "asked",
    "asked": "asked",
}


@approvals.command("list")
def list_approvals(
    ctx: typer.Context,
    pending: Annotated[bool, typer.Option("--pending", help="Only pending ones.")] = False,
    run_id: Annotated[str | None, typer.Option("--run", help="Only this run's.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """List approvals, oldest first, with their arguments."""
    from bot import views

    async def work(r: Reader) -> Any:
        if run_id is not None:
            await r.queries.run(run_id)  # an unknown run is refused, not an empty list
        found = await r.queries.approvals(run_id=run_id, state="pending" if pending else None)
        votes = await r.queries.quorum_votes(found)
        names = await people.of(r.slack, found, chain(*votes.values()))
        return found, votes, names, r.database.url

    found, votes, names, url = with_reader(ctx, work)
    if not found and not as_json:  # as `runs list` says it: an empty table reads as broken
        which = "pending approvals" if pending else "approvals"
        of_run = f" of run {run_id}" if run_id is not None else ""
        say(views.inert(f"no {which}{of_run} in {database_label(url)}"))
        return
    people.show(names)
    show(dumped(found), as_json=as_json, table=views.approvals_table(found, votes))


@approvals.command("decide")
def decide(
    ctx: typer.Context,
    approval_id: Annotated[str, typer.Argument(metavar="APPROVAL", help="The approval's id.")],
    decision: Annotated[
        str,
        typer.Argument(
            metavar="DECISION",
            help="approve, decline, or ask (a question back to the agent, given as --reason)",
        ),
    ],
    by: Annotated[str, typer.Option(help="Slack user id of the decider.")],
    reason: Annotated[
        str | None, typer.Option(help="Why (shown to the agent); with ask, the question.")
    ] = None,
    edit: Annotated[
        str | None,
        typer.Option(
            metavar="JSON",
            help="Approve these arguments instead: a JSON object, checked against the "
            "tool's arguments (the policy must allow edits).",
        ),
    ] = None,
    separate: Annotated[
        bool,
        typer.Option(
            "--separate",
            help="Approve a call whose key an earlier effect used with other arguments as an "
            "effect of its own (re-keyed); without it such an approval is refused.",
        ),
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Approve, decline or ask the agent a question, under the same policy checks as Slack.

    The run resumes here if its agent is loaded here, else where it is."""
    from bot.requests import DecisionRequest

    if decision not in DECISIONS:
        raise Failure("decision must be 'approve', 'decline' or 'ask'")
    if DECISIONS[decision] == "asked" and not (reason or "").strip():
        raise Failure("ask needs the question: --reason 'what would you like to know?'")
    state, args = DECISIONS[decision], edited_args(edit)
    check_user_id("--by", by)
    flags = {"by": "--by", "reason": "--reason", "args": "--edit"}
    checked_as_api(DecisionRequest, flags, decision=state, by=by, reason=reason, args=args)

    async def work(p: "Process") -> Any:
        rt = p.runtime
        if args is not None:
            await check_edit_here(rt, approval_id)
        from runtime.errors import KeyConflict

        try:
            decided = await rt.decide(
                approval_id, state, by=by, reason=reason, args=args, resume=False, separate=separate
            )
        except KeyConflict as conflict:
            raise Failure(
                f"{' '.join(str(conflict).split())} (`signoff approvals decide {approval_id} "
                "approve --separate` approves it as a separate effect)"
            ) from None
        run = await rt.find_run(decided.run_id)
        resumed = run is not None and decided.state != "pending" and run.agent in rt.agents
        if decided.state != "pending":  # a vote short of its quorum waits for more
            await rt.after_decision(decided, resume=resumed)  # callbacks; resume if loaded
        if run is not None and resumed:
            run = await rt.get(run.id)
            decided = await rt.queries.approval(decided.id)  # its cool-off began as it resumed
        votes = await p.runtime.queries.quorum_votes([decided])
        names = await people.of(p.settings.slack, [decided, run], votes.get(decided.id, []))
        return decided, run, resumed, votes, names

    decided, run, resumed, votes, names = with_process(ctx, work)
    people.show(names)
    tell_decided(decided, run, resumed=resumed, votes=votes, as_json=as_json)


def tell_decided(
    decided: "Approval",
    run: "Run | None",
    *,
    resumed: bool,
    votes: dict[str, list[str]],
    as_json: bool,
) -> None:
    """The approval, then one line on what happens next (on stderr under --json)."""
    from bot import views
    from bot import words

    data = decided.shown().model_dump(mode="json") | {
        "votes": votes.get(decided.id, []),
        "run": run.model_dump(mode="json") if run else None,
        "resumed": resumed,
    }
    show(data, as_json=as_json, table=views.approvals_table([decided], votes))
    if decided.state == "pending":
        voters = votes.get(decided.id, [])
        more = decided.required_approvals - len(voters)
        line = f"recorded: {views.quorum_text(decided, voters)}; waits for {more} more approver(s)"
    elif run is None:
        return
    elif decided.cool_off == "waiting":
        line = cool_off_line(decided, run)
    elif resumed:
        line = f"run {run.id} is now {views.run_status(run)} at step {run.step}"
    else:
        how = words.how_to_resume(run.id, run.agent)
        line = f"run {run.id} is {words.READY_TO_RESUME}: {how}"
    if as_json:
        typer.echo(views.inert(line).plain, err=True)
    else:
        say(views.inert(line))


def cool_off_line(decided: "Approval", run: "Run") -> str:
    """What an approval in its cool-off waits for, and what runs the call after it."""
    from bot import views

    return (
        f"approved: the call waits out its cool-off until {views.when(decided.cool_off_until)} "
        f"UTC (`signoff approvals cancel-cool-off {decided.id} --by <approver>` stops it "
        f"meanwhile); then `signoff serve` runs it, or `signoff runs resume {run.id}`"
    )


async def check_edit_here(rt: "Runtime", approval_id: str) -> None:
    """Edited arguments are checked against the tool's argument model, which only the run's
    agent has: without it here, the edit is refused rather than taken unchecked."""
    approval = await rt.queries.approval(approval_id)
    run = await rt.find_run(approval.run_id)
    if run is not None and run.agent not in rt.agents:
        raise Failure(
            f"--edit: run {run.id}'s agent {run.agent!r} is not loaded here, so the edited "
            "arguments cannot be checked; decide where it is loaded (SIGNOFF_AGENTS)"
        )
