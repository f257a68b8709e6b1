"""The `signoff` command line: serve, operate runs, decide approvals, handle pages, migrate.

One module per command group (`runs`, `approvals`, `pages`, `db`, `policy`, `audit`,
`envelopes`); `base`
holds what they share and `session` opens the database for a command. Every command is one
async operation entered with `asyncio.run`. Bad input and unknown ids exit non-zero with a
one-line reason on stderr; `--json` prints machine-readable output. The store, the runtime
and the server are imported only by the commands that use them, so `--help` and reads start quickly.
The command modules keep their annotations as objects (no `from __future__ import
annotations`): typer reads every command's on every start, and a string costs an `eval` each
(docs/benchmarks.md, issue 44.1).
"""

import sys
from typing import Annotated

import typer

from bot.cli import learned as _learned  # noqa: F401  (its commands join `policy`)
from bot.cli import policy_runs as _policy_runs  # noqa: F401  (`policy test`, `backtest`)
from bot.cli import stats as _stats  # noqa: F401  (`approvals stats`)
from bot.cli import take_back as _take_back  # noqa: F401  (`approvals cancel-cool-off`, `undo`)
from bot.cli.approvals import approvals
from bot.cli.audit import audit
from bot.cli.away import away
from bot.cli.base import Failure, LogFormatChoice, Options, group, options
from bot.cli.db import db
from bot.cli.doctor import doctor
from bot.cli.envelopes import envelopes
from bot.cli.mcp import mcp
from bot.cli.pages import pages
from bot.cli.policy import policy
from bot.cli.receipts import receipts
from bot.cli.runs import runs
from bot.cli.session import load, refusals

app = group("Durable agent runs with human sign-off in Slack.")
app.add_typer(runs, name="runs")
app.add_typer(approvals, name="approvals")
app.add_typer(pages, name="pages")
app.add_typer(db, name="db")
app.add_typer(policy, name="policy")
app.add_typer(audit, name="audit")
app.add_typer(receipts, name="receipts")
app.add_typer(envelopes, name="envelopes")
app.add_typer(away, name="away")
app.command()(mcp)
app.command()(doctor)


@app.callback()
def main_options(
    ctx: typer.Context,
    config: Annotated[
        str | None, typer.Option(metavar="PATH", help="Path to signoff.toml.")
    ] = None,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Log what happens; name the database.")
    ] = False,
    log_format: Annotated[
        LogFormatChoice,
        typer.Option(envvar="SIGNOFF_LOG_FORMAT", help="Log lines for people, or JSON."),
    ] = LogFormatChoice.human,
) -> None:
    from bot.logs import configure_logging

    configure_logging(verbose, log_format.value)
    ctx.obj = Options(config, verbose)


@app.command()
def serve(
    ctx: typer.Context,
    port: Annotated[
        int | None,
        typer.Option(min=0, max=65535, help="Port to listen on (default: SIGNOFF_PORT, 3000)."),
    ] = None,
) -> None:
    """Run the server (HTTP API, Slack, scheduler, recovery) until SIGTERM or Ctrl-C."""
    import asyncio
    import logging

    with refusals():
        settings = load(ctx)
        if port is not None:
            settings.api = settings.api.model_copy(update={"port": port})
        from bot.server import serve as serve_forever

        logging.getLogger("signoff").setLevel(logging.INFO)
        asyncio.run(serve_forever(settings))


@app.command()
def dev(
    ctx: typer.Context,
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port on 127.0.0.1 (0: any).")] = 8000,
    db: Annotated[str, typer.Option(metavar="PATH", help="The SQLite file.")] = "signoff-dev.db",
    config: Annotated[
        str | None,
        typer.Option(
            metavar="PATH",
            help="The project's signoff.toml (default: the one here, if any; else the demo).",
        ),
    ] = None,
) -> None:
    """Everything on this machine: the bot, a local Slack workspace and the run console."""
    import asyncio
    import logging
    from pathlib import Path

    from bot.dev.project import find
    from bot.dev.serve import run_dev

    with refusals():  # a project that cannot load starts nothing
        project = find(config or options(ctx).config)
        logging.getLogger("signoff").setLevel(logging.INFO)
        asyncio.run(run_dev(database=Path(db).resolve(), port=port, project=project))


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
    except Failure as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(exc.code)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
