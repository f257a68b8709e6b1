"""The `signoff` command line: serve, operate runs, decide approvals, handle pages, migrate.

One module per command group (`runs`, `approvals`, `pages`, `db`, `policy`, `audit`,
`envelopes`, ...); `base` holds what they share and `session` opens the database for a
command. Every command is one async operation entered with `asyncio.run`. Bad input and
unknown ids exit non-zero with a one-line reason on stderr; `--json` prints machine-readable
output. The store, the runtime and the server are imported only by the commands that use
them, so `--help` and reads start quickly; a command in a group imports and builds that
group alone (`GROUPS`). The command modules keep their annotations as objects (no `from
__future__ import annotations`): typer reads every command's on every start, and a string
costs an `eval` each (docs/benchmarks.md, issue 44.1).
"""

import sys
from importlib import import_module
from typing import Annotated

import typer

from bot.cli.base import Failure
from bot.cli.base import LogFormatChoice
from bot.cli.base import Options
from bot.cli.base import group
from bot.cli.base import options
from bot.cli.session import load
from bot.cli.session import refusals

GROUPS: dict[str, tuple[str, ...]] = {
    "runs": ("bot.cli.runs",),
    "approvals": ("bot.cli.approvals", "bot.cli.stats", "bot.cli.take_back"),
    "pages": ("bot.cli.pages",),
    "db": ("bot.cli.db",),
    "policy": ("bot.cli.policy", "bot.cli.learned", "bot.cli.policy_runs"),
    "audit": ("bot.cli.audit",),
    "receipts": ("bot.cli.receipts",),
    "envelopes": ("bot.cli.envelopes",),
    "away": ("bot.cli.away",),
}
"""Each command group, in `--help`'s order: its module (whose `typer.Typer` has the group's
name) first, then the modules that add commands to it, in the order they join."""
TAKES_A_VALUE = ("--config", "--log-format")
"""The options before the command that take a value as the next word."""


def build(only: str | None = None) -> typer.Typer:
    """The command tree; `only`: just that group under the main options (typer builds every
    command of the tree on every start, so a group's command imports and builds no other)."""
    app = group("Durable agent runs with human sign-off in Slack.")
    app.callback()(main_options)
    for name, modules in GROUPS.items():
        if only is None or name == only:
            app.add_typer(getattr(import_module(modules[0]), name), name=name)
            for module in modules[1:]:
                import_module(module)
    if only is None:
        from bot.cli.doctor import doctor
        from bot.cli.mcp import mcp

        for command in (mcp, doctor, serve, dev):
            app.command()(command)
    return app


def invoked_group(args: list[str]) -> str | None:
    """The group the command line names, if the main options before it are only those typer
    parses the same way whatever the groups are (no `--help`, no `--`); else None."""
    words = iter(args)
    for word in words:
        if word in ("--help", "--"):
            return None
        if word in TAKES_A_VALUE:
            next(words, None)
        elif not word.startswith("-"):
            return word if word in GROUPS else None
    return None


def __getattr__(name: str) -> typer.Typer:
    """`app`: the whole command tree, built when first asked for (`main` builds only the
    group it runs)."""
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    found = globals()["app"] = build()
    return found


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
        code = build(invoked_group(sys.argv[1:]))(standalone_mode=False)
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
