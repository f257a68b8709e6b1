"""One command's time with the database: settings, the database (and runtime), closing them.

Only `runs start` and `db migrate` may create a database. Every other command refuses a
SQLite file that does not exist, naming the path it looked for, instead of leaving an empty
`signoff.db` behind. With `-v` each command says which database it opened. Errors of the
settings, the database and the runtime become one-line refusals.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Coroutine
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import TypeVar

import typer

from bot.cli.base import CONFIG_ERROR
from bot.cli.base import Failure
from bot.cli.base import options

if TYPE_CHECKING:
    from bot.settings import Settings
    from bot.settings_slack import SlackSettings
    from bot.settings_source import DatabaseSettings
    from bot.wiring import Process
    from runtime import Database
    from runtime import Queries

T = TypeVar("T")


def with_process(
    ctx: typer.Context,
    work: Callable[[Process], Awaitable[T]],
    *,
    creates: bool = False,
    agents: bool = True,
) -> T:
    """Run `work` on the configured process, then close it. `creates`: the command may
    create the database; `agents`: it needs the configured agents (a read does not)."""
    from bot.wiring import assemble

    async def run(settings: Settings) -> T:
        process = await assemble(settings, short_lived=True, with_agents=agents)
        try:
            return await work(process)
        finally:
            await process.close()

    return _enter(ctx, run, creates=creates)


@dataclass(frozen=True)
class Reader:
    """What a command that only reads works with: the database's settings and the runtime's
    queries; Slack's settings (people's names) and the others (result masks need the
    policies) are read when the command first asks for them. No agent, engine or scheduler
    is loaded."""

    database: DatabaseSettings
    queries: Queries
    config: str | None = None
    """The configuration file named on the command line, if any."""

    @cached_property
    def settings(self) -> Settings:
        from bot.settings import load_settings

        return load_settings(self.config)

    @cached_property
    def slack(self) -> SlackSettings:
        from bot.settings_slack import SlackSettings
        from bot.settings_source import section_settings

        found = section_settings(self.config, "slack", SlackSettings)
        return found if found is not None else self.settings.slack  # refused, with its line


def with_reader(ctx: typer.Context, work: Callable[[Reader], Awaitable[T]]) -> T:
    """Run `work` on the configured database's queries, then close it. Only the database's
    settings are read first (`bot.settings_source.database_settings`): a read starts
    without building every setting."""
    import asyncio  # not at the top: `--help` does without it

    from runtime import Database

    async def run(settings: DatabaseSettings) -> T:
        database = await Database.open(settings.url, **settings.store_options())
        try:
            return await work(Reader(settings, database.queries, options(ctx).config))
        finally:
            await database.close()

    with refusals():
        settings = load_database(ctx)
        require_database(settings.url)
        return asyncio.run(run(settings))


def with_database(ctx: typer.Context, work: Callable[[Database], Awaitable[T]]) -> T:
    """Run `work` on the configured database, opened without migrating it."""
    from runtime import Database

    async def run(settings: Settings) -> T:
        database = await Database.open(settings.database.url, migrate=False)
        try:
            return await work(database)
        finally:
            await database.close()

    return _enter(ctx, run, creates=True)


def _enter(
    ctx: typer.Context, run: Callable[[Settings], Coroutine[Any, Any, T]], *, creates: bool
) -> T:
    import asyncio  # not at the top: `--help` does without it

    with refusals():
        settings = load(ctx)
        if not creates:
            require_database(settings.database.url)
        return asyncio.run(run(settings))


def load(ctx: typer.Context) -> Settings:
    """The settings; with `-v`, says which database they name (on stderr)."""
    from bot.settings import load_settings

    settings = load_settings(options(ctx).config)
    _say_database(ctx, settings.database.url)
    return settings


def load_database(ctx: typer.Context) -> DatabaseSettings:
    """The database's settings alone, read by the same rules; with `-v`, says which."""
    settings = database_of(options(ctx).config)
    _say_database(ctx, settings.url)
    return settings


def database_of(config: str | None) -> DatabaseSettings:
    """The database's settings alone (`bot.settings_source`); one with a mistake is refused
    by the full settings, which name the file's line."""
    from bot.settings_source import database_settings

    settings = database_settings(config)
    if settings is None:
        from bot.settings import load_settings

        return load_settings(config).database
    return settings


def _say_database(ctx: typer.Context, url: str) -> None:
    if options(ctx).verbose:
        typer.echo(f"database: {database_label(url)}", err=True)


@contextmanager
def refusals() -> Iterator[None]:
    """Errors of the settings, the database and the runtime, as one-line refusals; the
    settings' exit with CONFIG_ERROR, whichever command read them."""
    from bot.settings_source import ConfigError

    try:
        yield
    except ConfigError as exc:
        from bot.settle import refusal_text

        raise Failure(refusal_text(exc), code=CONFIG_ERROR) from None
    except (Failure, typer.Exit):
        raise
    except Exception as exc:
        # the runtime's and the store's errors are imported only once one is raised (a
        # command that raised one has loaded them; one that did not never needs them)
        from bot.settle import refusal_text
        from runtime.errors import SignoffRuntimeError
        from runtime.records import StoreError

        if isinstance(exc, SignoffRuntimeError | StoreError | OSError):
            raise Failure(refusal_text(exc)) from None
        raise


def database_file(url: str) -> Path | None:
    """The SQLite file a URL names; None for an in-memory or a non-SQLite database."""
    from runtime.records import sqlite_path

    if not url.startswith("sqlite:"):
        return None
    path = sqlite_path(url)
    return None if path == ":memory:" else Path(path).resolve()


def database_label(url: str) -> str:
    """Which database, for people: a SQLite file's absolute path, or the URL without its
    password."""
    file = database_file(url)
    return str(file) if file else re.sub(r"(//[^/:@]*):[^/@]*@", r"\1:***@", url)


def require_database(url: str) -> None:
    file = database_file(url)
    if file is not None and not file.exists():
        raise Failure(
            f"no database at {file} (SIGNOFF_DATABASE_URL, or database_url in signoff.toml); "
            f"`signoff runs start` or `signoff db migrate` creates one{_dev_hint(file)}"
        )


def _dev_hint(file: Path) -> str:
    """Where `signoff dev`'s runs are, when its database sits beside the one missing: a
    second terminal without the line `signoff dev` prints looks in ./signoff.db instead."""
    dev = file.with_name("signoff-dev.db")
    if dev == file or not dev.exists():
        return ""
    return (
        f"; the runs of `signoff dev` are in {dev}: paste the `export "
        "SIGNOFF_DATABASE_URL=…` line it prints"
    )
