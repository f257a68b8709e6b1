"""`signoff runs ...`: start runs, look at them, and operate them (resume, fork, roll back,
cancel, settle an effect in doubt, prune). One thin function per command."""

import math
import re
from collections.abc import Sequence
from itertools import chain
from typing import TYPE_CHECKING
from typing import Annotated
from typing import Any

import typer

from bot.cli import people
from bot.cli.base import CompensateShared
from bot.cli.base import Failure
from bot.cli.base import JsonFlag
from bot.cli.base import RunId
from bot.cli.base import YesFlag
from bot.cli.base import check_user_id
from bot.cli.base import checked_as_api
from bot.cli.base import dumped
from bot.cli.base import group
from bot.cli.base import positive_age
from bot.cli.base import say
from bot.cli.base import show
from bot.cli.session import Reader
from bot.cli.session import database_label
from bot.cli.session import with_process
from bot.cli.session import with_reader

if TYPE_CHECKING:
    from datetime import datetime

    from bot.wiring import Process
    from runtime import Queries
    from runtime import Runtime
    from runtime.records import Approval
    from runtime.records import Checkpoint
    from runtime.records import Effect
    from runtime.records import Run

runs = group("Start, inspect and operate runs.")
MAX_STEP = 2**31 - 1  # past what any run reaches, within what the database stores


@runs.command("start")
def start(
    ctx: typer.Context,
    agent: Annotated[str, typer.Argument(metavar="AGENT", help="The agent's name.")],
    task: Annotated[str, typer.Argument(metavar="TASK", help="What the agent is to do.")],
    run_id: Annotated[
        str | None,
        typer.Option(help="Idempotent: an existing id resumes. Default: derived from the request."),
    ] = None,
    requested_by: Annotated[str | None, typer.Option(help="Slack id of the requester.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Start a run and drive it until it ends or waits.

    Idempotent: without --run-id the id is derived from the agent, task and requester, so a
    retried command resumes the run it started instead of starting a second one."""
    from bot.requests import RunRequest

    flags = {"task": "TASK", "requested_by": "--requested-by", "agent": "AGENT"}
    checked_as_api(RunRequest, flags, agent=agent, task=task, requested_by=requested_by)
    from runtime.limits import ID_PATTERN
    from runtime.limits import MAX_ID

    if run_id is not None and not re.fullmatch(ID_PATTERN, run_id):
        raise Failure(f"--run-id {run_id[:80]!r} is not 1-{MAX_ID} letters, digits or _ . : -")

    # Idempotent by default, like the API with an id: the same request names the same run.
    chosen = run_id or derived_run_id(agent, task, requested_by)

    async def work(p: "Process") -> "Run":
        from runtime.errors import SignoffRuntimeError
        from runtime.records import StoreError

        # The run and its first checkpoint are created in one transaction: if that fails,
        # nothing exists. Once it exists, a failure names the run it left and how to go on.
        run, created = await p.runtime.create(agent, task, run_id=chosen, requested_by=requested_by)
        if not created and run_id is None:
            tell(
                f"resumed existing run {run.id} (same agent, task and requester); "
                "give --run-id to start another",
                as_json=as_json,
            )
        elif not created:
            tell(f"resumed existing run {run.id}", as_json=as_json)
        try:
            await p.runtime.drive(run.id)
        except (SignoffRuntimeError, StoreError, OSError) as exc:
            raise Failure(
                f"{' '.join(str(exc).split())}; run {run.id} exists and was left unfinished: "
                f"retry this command, or continue it with `signoff runs resume {run.id}`"
            ) from None
        ended = await p.runtime.get(run.id)
        await answer(p.runtime, ended, as_json=as_json)
        return ended

    exit_if_it_failed(with_process(ctx, work, creates=True))


def derived_run_id(agent: str, task: str, requested_by: str | None) -> str:
    """A run id from the request itself: the agent's name to read, then a hash of the agent,
    task and requester to tell requests apart. The same request names the same run."""
    import hashlib  # here: only `runs start` hashes (OpenSSL's module is slow to load)

    material = "\x00".join((agent, task, requested_by or ""))
    digest = hashlib.blake2b(material.encode(), digest_size=8).hexdigest()
    return f"{re.sub(r'[^A-Za-z0-9_.:-]', '-', agent)[:60]}-{digest}"


def tell(line: str, *, as_json: bool) -> None:
    """A line for people: on stderr under --json, so stdout stays one JSON document."""
    from bot import views

    if as_json:
        typer.echo(views.inert(line).plain, err=True)
    else:
        say(views.inert(line))


RUN_FAILED = 3
"""The exit status of `runs start` and `runs resume` when the run they drove failed (a tool
it called failed too) or was cancelled: the command did its work (1 is for a refusal, which
changes nothing)."""


def exit_if_it_failed(run: "Run") -> None:
    from bot import words

    if words.outcome_of(run) in (words.FAILED, words.CANCELLED, words.ROLLED_BACK):
        from bot import views

        said = views.status_text(run.status.value, run.stop_reason)
        tell(f"run {run.id} {said}" + (f": {run.error}" if run.error else ""), as_json=True)
        raise typer.Exit(RUN_FAILED)


async def answer(rt: "Runtime", run: "Run", *, as_json: bool) -> None:
    """A run and what it waits for: for scripts as `GET /v1/runs/{id}` shows it, for
    people with the command that decides each pending approval."""
    if as_json:
        from bot.json_views import run_view  # the API's own view: scripts see one shape

        show(await run_view(rt, run), as_json=True)
        return
    from bot import views

    say(views.runs_table([run]))
    for approval in await rt.approvals(run.id, state="pending"):
        call = views.call_text(approval)
        note = views.duplicate_note(approval)
        say(views.inert(f"waiting for approval {approval.id}: {call}{note}; decide with:"))
        if approval.conflict is not None:  # a plain approval of a key conflict is refused
            say(f"  signoff approvals decide {approval.id} decline --by <Slack user id>")
            say(f"  signoff approvals decide {approval.id} approve --separate --by <Slack user id>")
        else:
            say(f"  signoff approvals decide {approval.id} approve --by <Slack user id>")


@runs.command("list")
def list_runs(
    ctx: typer.Context,
    status: Annotated[
        str | None,
        typer.Option(help="Only runs with this status: running, waiting_approval, done, ..."),
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=10_000, help="At most this many.")] = 50,
    as_json: JsonFlag = False,
) -> None:
    """List runs, newest first."""

    async def work(r: Reader) -> Any:
        found = await r.queries.runs(status, limit=limit)
        return found, await parked_runs(r.queries, found), r.database.url

    found, (decided, cooling), url = with_reader(ctx, work)
    if as_json:
        show(dumped(found), as_json=True)
        return
    from bot import views

    where = f"in {database_label(url)}" + (f" with status {status}" if status else "")
    if not found:
        say(f"no runs {where}")
        return
    caption = f"{len(found)} run(s) {where}"
    say(views.runs_table(found, decided=decided, cooling=cooling, caption=caption))


async def parked_runs(
    queries: "Queries", runs: "Sequence[Run]"
) -> tuple[set[str], dict[str, "datetime"]]:
    """The parked runs among `runs` with no approval pending (ready to resume), and when the
    call each of those waiting out a cool-off waits on runs."""
    from bot import words

    decided, cooling = set(), {}
    for run in runs:
        if run.status != "waiting_approval":
            continue
        approvals = await queries.approvals(run_id=run.id)
        if all(a.state != "pending" for a in approvals):
            decided.add(run.id)
        if (end := words.cool_off_end(approvals)) is not None:
            cooling[run.id] = end
    return decided, cooling


@runs.command("show")
def show_run(ctx: typer.Context, run_id: RunId, as_json: JsonFlag = False) -> None:
    """One run: state, usage, approvals, effects."""

    from bot.masking import ResultMasks

    async def work(r: Reader) -> Any:
        run = await r.queries.run(run_id)
        approvals = await r.queries.approvals(run_id=run_id)
        votes = await r.queries.quorum_votes(approvals)
        effects = await r.queries.effects(run_id)
        names = await people.of(r.slack, [run, *approvals], chain(*votes.values()))
        masks = ResultMasks(r.settings.runtime.policies)
        return run, approvals, masks.effects(effects), votes, names

    run, approvals, effects, votes, names = with_reader(ctx, work)
    people.show(names)
    if as_json:
        from runtime.approvals import call_trail

        trail = [c.as_dict() for c in call_trail(approvals, effects)]
        data = {"approvals": dumped(approvals), "effects": dumped(effects), "calls": trail}
        show(run.model_dump(mode="json") | data, as_json=True)
        return
    from bot import views

    decided = all(a.state != "pending" for a in approvals)
    say(views.run_table(run, approvals, effects, votes=votes, decided=decided))


@runs.command()
def history(ctx: typer.Context, run_id: RunId, as_json: JsonFlag = False) -> None:
    """One line per checkpoint: step, status, cost, what was appended."""
    from bot import views
    from bot.masking import ResultMasks
    from bot.masking import masked_history
    from bot.masking import sensitive_by_tool

    async def work(p: "Process") -> "tuple[list[Checkpoint], list[Approval]]":
        found = await p.runtime.history(run_id)
        approvals = await p.runtime.approvals(run_id)
        records: list[Effect | Approval] = [*await p.runtime.queries.effects(run_id), *approvals]
        ruled = [a for a in approvals if views.ruled(a)]
        masks = ResultMasks(p.runtime.policies)
        return masked_history(found, sensitive_by_tool(records), masks), ruled

    found, ruled = with_process(ctx, work, agents=False)
    show(dumped(found), as_json=as_json, table=views.history_table(found, ruled))


@runs.command()
def resume(
    ctx: typer.Context,
    run_id: RunId,
    max_steps: Annotated[
        int | None, typer.Option(min=1, max=MAX_STEP, help="Raise the step limit.")
    ] = None,
    max_input_tokens: Annotated[
        int | None, typer.Option(min=1, help="Raise the input-token limit.")
    ] = None,
    max_output_tokens: Annotated[
        int | None, typer.Option(min=1, help="Raise the output-token limit.")
    ] = None,
    max_cost: Annotated[
        float | None, typer.Option(min=0, help="Raise the cost limit (dollars).")
    ] = None,
    override_model_by: Annotated[
        str | None,
        typer.Option(
            help="Go on with the model configured here although the run started on another; "
            "your Slack user id, recorded in the audit.",
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Resume a stopped or decided run.

    For a run stopped by a budget (raise its limits here: usage carries over), an error, an
    in-doubt effect a human settled, or a decision made where its agent was not loaded."""
    if max_cost is not None and not math.isfinite(max_cost):
        raise Failure("--max-cost: must be a finite number of dollars")
    given = {
        "max_steps": max_steps,
        "max_input_tokens": max_input_tokens,
        "max_output_tokens": max_output_tokens,
        "max_cost": max_cost,
    }
    limits = {name: value for name, value in given.items() if value is not None}
    if override_model_by is not None:
        check_user_id("--override-model-by", override_model_by)

    async def work(p: "Process") -> "Run":
        budget = None
        if limits:
            budget = (await p.runtime.get(run_id)).budget.model_copy(update=limits)
        ended = await p.runtime.resume(run_id, budget=budget, override_model_by=override_model_by)
        await answer(p.runtime, ended, as_json=as_json)
        return ended

    exit_if_it_failed(with_process(ctx, work))


@runs.command()
def fork(
    ctx: typer.Context,
    run_id: RunId,
    from_step: Annotated[
        int, typer.Option("--from-step", min=0, max=MAX_STEP, help="Fork from this step.")
    ],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Mutating tools do not run.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Fork a run from a step and drive the fork.

    Effects that happened after the step are not redone."""
    from bot import views
    from bot.masking import ResultMasks

    async def work(p: "Process") -> Any:
        happened = ResultMasks(p.runtime.policies).effects(
            await p.runtime.effects_after(run_id, from_step)
        )
        if happened and not as_json:
            say(f"Already happened after step {from_step} (will not run again):")
            say(views.effects_table(happened))
        new_id = await p.runtime.fork(run_id, from_step, dry_run=dry_run)
        return await p.runtime.get(new_id), happened

    run, happened = with_process(ctx, work)
    if not as_json:
        say(f"forked {run_id} from step {from_step} as {run.id}")
    data = run.model_dump(mode="json") | {"already_happened": dumped(happened)}
    show(data, as_json=as_json, table=views.runs_table([run]))


@runs.command()
def rollback(
    ctx: typer.Context,
    run_id: RunId,
    to_step: Annotated[
        int, typer.Option("--to-step", min=0, max=MAX_STEP, help="Restore this step.")
    ],
    yes: YesFlag = False,
    as_json: JsonFlag = False,
    compensate_shared: CompensateShared = False,
) -> None:
    """Roll a run back to a step.

    Its effects after the step are compensated (or paged) and the step's state restored. One
    another run relies on is compensated only with --compensate-shared; without it the
    rollback is refused, naming those runs, and changes nothing."""
    if not yes:
        also = (
            "; those other runs rely on are undone too, and they are paged for and noted"
            if compensate_shared
            else ""
        )
        typer.confirm(
            f"Roll run {run_id} back to step {to_step}? Effects after it will be "
            f"compensated or paged{also}",
            abort=True,
            err=True,
        )

    async def work(p: "Process") -> Any:
        report = await p.runtime.rollback(
            run_id, to_step, by="cli", compensate_shared=compensate_shared
        )
        return report, await p.runtime.queries.effects(run_id)

    report, effects = with_process(ctx, work)
    from bot import views

    data = report.as_dict()
    show(data, as_json=as_json, table=views.rollback_table(data, effects))


@runs.command()
def cancel(
    ctx: typer.Context,
    run_id: RunId,
    reason: Annotated[str, typer.Option(help="Why, for the audit log.")] = "",
    compensate: Annotated[
        bool, typer.Option(help="Undo a reversible tool still running once it ends.")
    ] = False,
    as_json: JsonFlag = False,
    compensate_shared: CompensateShared = False,
) -> None:
    """Cancel a run for good; its pending approvals are declined."""
    from bot import views
    from bot.requests import CancelRequest

    checked_as_api(CancelRequest, {"reason": "--reason"}, reason=reason)

    async def cancel(p: "Process") -> "tuple[Run, str | None]":
        run = await p.runtime.cancel(
            run_id,
            by="cli",
            reason=reason,
            compensate=compensate,
            compensate_shared=compensate_shared,
        )
        running = await p.runtime.in_flight(run.id)
        relying = await p.runtime.relying_on(running) if compensate else None
        return run, p.runtime.still_running(run.id, running, compensate=compensate, relying=relying)

    run, note = with_process(ctx, cancel)
    shown = run.model_dump(mode="json") | ({"note": note} if note else {})
    show(shown, as_json=as_json, table=views.runs_table([run]))
    if note and not as_json:
        typer.echo(note)


@runs.command()
def resolve(
    ctx: typer.Context,
    run_id: RunId,
    call_id: Annotated[str, typer.Argument(metavar="CALL", help="The in-doubt effect's call id.")],
    happened: Annotated[
        bool, typer.Option("--happened/--did-not-happen", help="What the outside system shows.")
    ],
    by: Annotated[str, typer.Option(help="Slack user id of who checked.")],
    as_json: JsonFlag = False,
) -> None:
    """Settle an effect in doubt (and its page).

    Then `runs resume` continues the run."""
    check_user_id("--by", by)

    async def work(p: "Process") -> "Effect":
        from runtime import Permission
        from runtime.permissions import OPERATOR

        about = await p.runtime.settled_on(run_id, call_id)
        await p.runtime.check(OPERATOR.acting_for(by), Permission.SETTLE, about)
        return await p.runtime.resolve(run_id, call_id, happened=happened, by=by)

    effect = with_process(ctx, work)
    show(
        effect.shown().model_dump(mode="json"),
        as_json=as_json,
        table=f"{effect.tool} ({call_id}) is now {effect.status.value}; "
        f"continue with: signoff runs resume {run_id}",
    )


@runs.command()
def prune(
    ctx: typer.Context,
    older_than: Annotated[str, typer.Option("--older-than", help="e.g. 30d, 12h.")],
    include_audit: Annotated[
        bool,
        typer.Option(
            "--include-audit", help="Also delete the pruned runs' audit events before the cutoff."
        ),
    ] = False,
    yes: YesFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Delete old finished runs.

    Deletes the lineages (a run and its forks) last touched before the cutoff, with their
    whole history; never one with an open page or an effect still running or in doubt.
    Their audit events are kept (auditors keep them longer) unless --include-audit."""
    age = positive_age("--older-than", older_than)
    if not yes:
        audit = " and their audit events" if include_audit else ""
        typer.confirm(
            f"Delete every finished run (with its forks){audit} untouched for {older_than}?",
            abort=True,
            err=True,  # stdout stays the command's answer (--json)
        )

    async def work(p: "Process") -> tuple[int, int]:
        try:
            cutoff = p.runtime.clock() - age
        except OverflowError:
            raise Failure(f"--older-than: {older_than!r} reaches before any date") from None
        return await p.database.prune(cutoff, include_audit=include_audit)

    removed, events = with_process(ctx, work, agents=False)
    said = f"pruned {removed} finished run(s)"
    said += f" and {events} audit event(s)" if include_audit else "; their audit events are kept"
    answer = {"pruned": removed} | ({"audit_events_pruned": events} if include_audit else {})
    show(answer, as_json=as_json, table=said)
