"""The `signoff` command line: serve, operate runs, list approvals, migrate the database.

Every command is one async operation entered with `asyncio.run`. Bad input and unknown ids
exit non-zero with a one-line reason on stderr; `--json` prints machine-readable output.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Annotated, Any, TypeVar

import typer
from pydantic import BaseModel
from rich.console import Console

from bot import views
from bot.settings import ConfigError, Settings, load_settings
from bot.wiring import Process, assemble
from runtime.errors import SignoffRuntimeError
from runtime.policy import parse_duration
from store import Approval, ApprovalState, Run, open_store
from store.errors import StoreError

T = TypeVar("T")

app = typer.Typer(
    help="Durable agent runs with human sign-off in Slack.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
runs = typer.Typer(help="Inspect and operate runs.", no_args_is_help=True)
approvals = typer.Typer(help="Approvals, pending and decided.", no_args_is_help=True)
db = typer.Typer(help="The database.", no_args_is_help=True)
app.add_typer(runs, name="runs")
app.add_typer(approvals, name="approvals")
pages = typer.Typer(
    help="Effects a human must handle (in doubt, not undoable).", no_args_is_help=True
)
app.add_typer(db, name="db")
app.add_typer(pages, name="pages")

# Piped output keeps whole lines (rich would squeeze tables to 80 columns).
out = Console() if sys.stdout.isatty() else Console(width=200)
JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
MAX_STEP = 2**31 - 1  # past what any run reaches, within what the database stores
RunId = Annotated[str, typer.Argument(help="The run's id.")]


class Failure(Exception):
    """A one-line reason to exit non-zero."""


@app.callback()
def main_options(
    ctx: typer.Context,
    config: Annotated[str | None, typer.Option(help="Path to signoff.toml.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log what happens.")] = False,
) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    ctx.obj = config


def settings_of(ctx: typer.Context) -> Settings:
    return load_settings(ctx.obj)


def with_process(ctx: typer.Context, work: Callable[[Process], Awaitable[T]]) -> T:
    async def run() -> T:
        process = await assemble(settings_of(ctx), short_lived=True)
        try:
            return await work(process)
        finally:
            await process.close()

    return asyncio.run(run())


def dumped(records: Sequence[BaseModel]) -> list[dict[str, Any]]:
    return [record.model_dump(mode="json") for record in records]


def show(value: Any, *, as_json: bool, table: Any = None) -> None:
    if as_json:
        typer.echo(views.as_json(value))
    else:
        out.print(table if table is not None else value)


# serve and db


@app.command()
def serve(ctx: typer.Context) -> None:
    """Run the server: HTTP API, reminders and timeouts, recovery of interrupted runs."""
    from bot.server import serve as serve_forever

    logging.getLogger("signoff").setLevel(logging.INFO)
    asyncio.run(serve_forever(settings_of(ctx)))


@db.command()
def migrate(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """Apply pending schema migrations (safe to run again)."""

    async def run() -> tuple[int, int]:
        store = await open_store(settings_of(ctx).database_url, migrate=False)
        try:
            return await store.migrate()  # type: ignore[attr-defined, no-any-return]
        finally:
            await store.close()

    before, after = asyncio.run(run())
    text = f"schema version {after}" + (f" (was {before})" if before != after else " (up to date)")
    show({"version": after, "was": before}, as_json=as_json, table=text)


# runs


@runs.command("start")
def start_run(
    ctx: typer.Context,
    agent: str,
    task: str,
    run_id: Annotated[str | None, typer.Option(help="Idempotent: an existing id resumes.")] = None,
    requested_by: Annotated[str | None, typer.Option(help="Slack id of the requester.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Start a run of an agent and drive it until it finishes or waits for approval."""

    async def work(p: Process) -> Any:
        started = await p.runtime.start(agent, task, run_id=run_id, requested_by=requested_by)
        return await p.runtime.get(started), await p.runtime.approvals(started, state="pending")

    run, pending = with_process(ctx, work)
    show_with_pending(run, pending, as_json=as_json)


def show_with_pending(run: Run, pending: Sequence[Approval], *, as_json: bool) -> None:
    """A run, and for people, how to decide what it waits for."""
    data = run.model_dump(mode="json") | {"pending_approvals": [a.id for a in pending]}
    show(data, as_json=as_json, table=views.runs_table([run]))
    if not as_json:
        for approval in pending:
            out.print(
                f"waiting for approval {approval.id}: {approval.tool}"
                f"({views.short(views.as_json(approval.args), 80)}); decide with:\n"
                f"  signoff approvals decide {approval.id} approve --by <Slack user id>",
                soft_wrap=True,
            )


@runs.command("list")
def list_runs(
    ctx: typer.Context,
    status: Annotated[str | None, typer.Option(help="Only runs with this status.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=10_000)] = 50,
    as_json: JsonFlag = False,
) -> None:
    """List runs, newest first."""
    found = with_process(ctx, lambda p: p.runtime.list(status, limit=limit))
    show(dumped(found), as_json=as_json, table=views.runs_table(found))


@runs.command("show")
def show_run(ctx: typer.Context, run_id: RunId, as_json: JsonFlag = False) -> None:
    """A run's state, usage against its budget, approvals and effects."""

    async def work(p: Process) -> Any:
        run = await p.runtime.get(run_id)
        return run, await p.runtime.approvals(run_id), await p.store.list_effects(run_id)

    run, its_approvals, effects = with_process(ctx, work)
    data = run.model_dump(mode="json") | {
        "approvals": dumped(its_approvals),
        "effects": dumped(effects),
    }
    show(data, as_json=as_json, table=views.run_table(run, its_approvals, effects))


@runs.command()
def history(ctx: typer.Context, run_id: RunId, as_json: JsonFlag = False) -> None:
    """One line per checkpoint: step, status, cost, what was appended."""
    found = with_process(ctx, lambda p: p.runtime.history(run_id))
    show(
        dumped(found),
        as_json=as_json,
        table=views.history_table(found),
    )


@runs.command()
def resume(
    ctx: typer.Context,
    run_id: RunId,
    max_steps: Annotated[int | None, typer.Option(min=1, help="Raise the step limit.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Resume a run that stopped (budget, error, in-doubt effect settled by a human)."""

    async def work(p: Process) -> Any:
        budget = None
        if max_steps is not None:
            current = (await p.runtime.get(run_id)).budget
            budget = current.model_copy(update={"max_steps": max_steps})
        run = await p.runtime.resume(run_id, budget=budget)
        return run, await p.runtime.approvals(run_id, state="pending")

    run, pending = with_process(ctx, work)
    show_with_pending(run, pending, as_json=as_json)


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
    """Fork a run from a step and drive the fork; effects that happened are not redone."""

    async def work(p: Process) -> Any:
        happened = await p.runtime.effects_after(run_id, from_step)
        if happened and not as_json:
            out.print(f"Already happened after step {from_step} (will not run again):")
            out.print(views.effects_table(happened))
        new_id = await p.runtime.fork(run_id, from_step, dry_run=dry_run)
        return await p.runtime.get(new_id), happened

    run, happened = with_process(ctx, work)
    if not as_json:
        out.print(f"forked {run_id} from step {from_step} as {run.id}", soft_wrap=True)
    data = run.model_dump(mode="json") | {"already_happened": dumped(happened)}
    show(data, as_json=as_json, table=views.runs_table([run]))


@runs.command()
def rollback(
    ctx: typer.Context,
    run_id: RunId,
    to_step: Annotated[
        int, typer.Option("--to-step", min=0, max=MAX_STEP, help="Restore this step.")
    ],
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Undo a run's effects after a step (compensate or page) and restore that step's state."""
    if not yes:
        typer.confirm(
            f"Roll run {run_id} back to step {to_step}? Effects after it will be "
            "compensated or paged",
            abort=True,
            err=True,
        )

    async def work(p: Process) -> Any:
        report = await p.runtime.rollback(run_id, to_step)
        return report, await p.store.list_effects(run_id)

    report, effects = with_process(ctx, work)
    data = report.as_dict()
    show(data, as_json=as_json, table=views.rollback_table(data, effects))


@runs.command()
def cancel(
    ctx: typer.Context,
    run_id: RunId,
    reason: Annotated[str, typer.Option(help="Why, for the audit log.")] = "",
    as_json: JsonFlag = False,
) -> None:
    """Cancel a run for good; its pending approvals are declined."""
    run = with_process(ctx, lambda p: p.runtime.cancel(run_id, by="cli", reason=reason))
    show(run.model_dump(mode="json"), as_json=as_json, table=views.runs_table([run]))


@runs.command()
def prune(
    ctx: typer.Context,
    older_than: Annotated[str, typer.Option("--older-than", help="e.g. 30d, 12h.")],
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Delete finished lineages last touched before the cutoff, with their whole history
    (never one with an open page or an effect still running or in doubt)."""
    try:
        age = parse_duration(older_than, unit_required=True)
    except ValueError as exc:
        raise Failure(f"--older-than: {exc}") from None
    if age <= timedelta(0):
        raise Failure("--older-than must be a positive duration such as 30d")
    if not yes:
        typer.confirm(
            f"Delete every finished run (with its forks) untouched for {older_than}?",
            abort=True,
            err=True,  # stdout stays the command's answer (--json)
        )

    async def work(p: Process) -> int:
        try:
            cutoff = p.runtime.clock() - age
        except OverflowError:
            raise Failure(f"--older-than: {older_than!r} reaches before any date") from None
        return await p.store.prune_runs(cutoff)

    removed = with_process(ctx, work)
    show({"pruned": removed}, as_json=as_json, table=f"pruned {removed} finished run(s)")


# approvals


@approvals.command("list")
def list_approvals(
    ctx: typer.Context,
    pending: Annotated[bool, typer.Option("--pending", help="Only pending ones.")] = False,
    run_id: Annotated[str | None, typer.Option("--run", help="Only this run's.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """List approvals, oldest first."""
    state = ApprovalState.PENDING if pending else None
    found = with_process(ctx, lambda p: p.runtime.approvals(run_id, state=state))
    show(
        dumped(found),
        as_json=as_json,
        table=views.approvals_table(found),
    )


@approvals.command("decide")
def decide(
    ctx: typer.Context,
    approval_id: str,
    decision: Annotated[str, typer.Argument(help="approve or decline")],
    by: Annotated[str, typer.Option(help="Slack user id of the decider.")],
    reason: Annotated[str | None, typer.Option(help="Why (shown to the agent).")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Decide an approval from the terminal, under the same policy checks as Slack."""
    states = {
        "approve": "approved",
        "approved": "approved",
        "decline": "declined",
        "declined": "declined",
    }
    if decision not in states:
        raise Failure("decision must be 'approve' or 'decline'")

    async def work(p: Process) -> Any:
        decided = await p.runtime.decide(approval_id, states[decision], by=by, reason=reason)  # type: ignore[arg-type]
        run = await p.runtime.get(decided.run_id) if decided.run_id else None
        return decided, run

    decided, run = with_process(ctx, work)
    data = decided.model_dump(mode="json") | {"run": run.model_dump(mode="json") if run else None}
    show(data, as_json=as_json, table=views.approvals_table([decided]))
    if run is not None and not as_json:
        status = views.status_text(run.status.value, run.stop_reason)
        out.print(f"run {run.id} is now {status} at step {run.step}", soft_wrap=True)


@runs.command()
def resolve(
    ctx: typer.Context,
    run_id: RunId,
    call_id: Annotated[str, typer.Argument(help="The in-doubt effect's call id.")],
    happened: Annotated[
        bool, typer.Option("--happened/--did-not-happen", help="What the outside system shows.")
    ],
    by: Annotated[str, typer.Option(help="Slack user id of who checked.")],
    as_json: JsonFlag = False,
) -> None:
    """Settle an effect in doubt (and its page); then `runs resume` continues the run."""
    effect = with_process(
        ctx, lambda p: p.runtime.resolve(run_id, call_id, happened=happened, by=by)
    )
    show(
        effect.model_dump(mode="json"),
        as_json=as_json,
        table=f"{effect.tool} ({call_id}) is now {effect.status.value}; "
        f"continue with: signoff runs resume {run_id}",
    )


@pages.command("list")
def list_pages(
    ctx: typer.Context,
    all_pages: Annotated[bool, typer.Option("--all", help="Acknowledged ones too.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Pages, oldest first: what a human must check by hand."""
    found = with_process(ctx, lambda p: p.store.list_pages(open_only=not all_pages))
    show(
        dumped(found),
        as_json=as_json,
        table=views.pages_table(found),
    )


@pages.command("ack")
def acknowledge(
    ctx: typer.Context,
    page_id: str,
    by: Annotated[str, typer.Option(help="Slack user id of who handled it.")],
    as_json: JsonFlag = False,
) -> None:
    """Acknowledge a page once it is handled."""

    async def work(p: Process) -> Any:
        try:
            return await p.runtime.acknowledge_page(page_id, by=by)
        except (StoreError, SignoffRuntimeError) as exc:
            raise Failure(str(exc)) from None

    page = with_process(ctx, work)
    show(page.model_dump(mode="json"), as_json=as_json, table=views.pages_table([page]))


def main() -> None:
    """The console script: one line on stderr and a non-zero exit for any refusal."""
    try:
        code = app(standalone_mode=False)
    except typer.Abort:
        typer.echo("aborted", err=True)
        sys.exit(1)
    except typer.TyperException as exc:
        message = exc.format_message().strip()
        if message:
            typer.echo(message if "\n" in message else f"error: {message}", err=True)
        sys.exit(exc.exit_code)
    except (Failure, ConfigError, SignoffRuntimeError, StoreError, OSError) as exc:
        typer.echo(f"error: {' '.join(str(exc).split())}", err=True)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
