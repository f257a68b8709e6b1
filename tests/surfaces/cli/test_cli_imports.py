"""A command imports what it uses: `signoff --help` loads no database, runtime, server,
model code, event loop or logging; the read commands no server, engine, PostgreSQL driver,
CEL, signing, delivery bookkeeping, assembled process or example agents, and `runs list`
not every setting either (only the database's: no pydantic-settings, no section but the
database's, not Slack's); `policy check` no server, no database, no rich (it prints plain text),
and not the client's models or cryptography the example's receipts module loads only to
check a receipt. A command in
a group imports and builds no other group's commands.
A module a command must not import, imported first (a synthetic breach), fails the check.
Each command runs in a fresh interpreter (the console script's own `main`), which then lists
the modules it imported. And typer reads every command's annotations on every start, so
they are objects, not strings to evaluate (`from __future__ import annotations` stays out
of the command modules)."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from support.helpers import run_text

from bot.cli import GROUPS
from bot.cli import app

from .test_cli import Cli
from .test_cli_decide import fresh_cli
from .test_cli_decide import parked

PROBE = """
import sys
from bot.cli import main
try:
    main()
except SystemExit as exit:
    code = exit.code
else:
    code = 0
print("\\n".join(sorted(sys.modules)), file=sys.stderr)
sys.exit(code)
"""
"""Runs the console script's `main` with the probe's arguments, then names every module
the process imported, one a line on stderr."""

SERVER = ("aiohttp", "slack_bolt", "slack_sdk", "bot.api", "bot.requests", "bot.server")
"""The server: the HTTP stack, Slack, the API's request models."""
DRIVING = ("asyncpg", "celpy", "apscheduler", "runtime.engine", "bot.wiring")
"""The PostgreSQL driver, the rules' CEL, the scheduler and the engine that drives runs."""
SIGNING = ("cryptography", "runtime.signing")
"""Receipts' and anchors' signatures: loaded by the commands that sign or verify."""
SECTIONS = ("bot.settings", "bot.sections", "bot.policy_ids")
"""Every setting and its section's models: a read needs only the database's settings (and
Slack's to name people), which it reads alone (`bot.settings_source`)."""
SETTINGS = ("pydantic_settings", *SECTIONS)
"""The above and pydantic-settings (Slack's section needs it; the database's does not)."""
DATABASE = ("store.sqlite", "aiosqlite", "asyncpg", "runtime.database")
SENDING = ("runtime.deliveries", "bot.wiring", "examples")
"""What only a process that delivers or drives runs needs: the outbox's and callbacks'
bookkeeping, the assembled process, the example agents and their world."""


def other_groups(name: str) -> tuple[str, ...]:
    """The command modules of every group but `name`, and of the commands outside a group:
    a group's command builds only its own group's commands."""
    others = (m for group, modules in GROUPS.items() if group != name for m in modules)
    return (*others, "bot.cli.mcp", "bot.cli.doctor")


EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "signoff.toml"


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Cli:
    return fresh_cli(tmp_path, monkeypatch)


def imported(cli: Cli, *args: str, first: str = "") -> set[str]:
    """The modules the command imported; `first`: a module the probe imports before it."""
    probe = f"import {first}\n{PROBE}" if first else PROBE
    done = run_text([sys.executable, "-c", probe, *args], cwd=cli.cwd, env=cli.env)
    assert done.returncode == 0, done.stderr
    return set(done.stderr.split())


def loaded(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    """The modules of `packages` (each a package or a module) among `modules`."""
    return sorted(m for m in modules for p in packages if m == p or m.startswith(f"{p}."))


def test_help_imports_no_database_runtime_or_server(cli: Cli) -> None:
    modules = imported(cli, "--help")

    assert "bot.cli.runs" in modules  # the probe sees what the command imported
    heavy = (*SERVER, *DRIVING, "pydantic", "pydantic_settings", "store", "runtime", "rich")
    assert loaded(modules, (*heavy, "asyncio", "bot.logs", "signoff")) == []


READS: dict[tuple[str, ...], tuple[str, ...]] = {
    ("runs", "list"): (
        *(*SERVER, *DRIVING, *SIGNING, *SENDING, *SETTINGS, "bot.settings_slack"),
        *other_groups("runs"),
    ),
    ("approvals", "list"): (
        *(*SERVER, *DRIVING, *SIGNING, *SENDING, *SECTIONS),
        *other_groups("approvals"),
    ),
    ("pages", "list"): (*SERVER, *DRIVING, *SIGNING, *SENDING, *SECTIONS, *other_groups("pages")),
    ("runs", "show", "r1"): (*SERVER, *DRIVING, *SIGNING, *SENDING, *other_groups("runs")),
}
"""Each read command and what it must not import (`runs show` masks results by the
policies, so it reads every setting), other groups' commands included."""


def check_read(cli: Cli, command: tuple[str, ...], first: str = "") -> list[str]:
    """What the read command imported that it must not."""
    modules = imported(cli, *command, first=first)
    assert "store.sqlite.store" in modules  # it did read the database
    return loaded(modules, READS[command])


@pytest.mark.parametrize("command", READS, ids=" ".join)
def test_a_read_imports_no_server_engine_driver_or_cel(cli: Cli, command: tuple[str, ...]) -> None:
    parked(cli)

    assert check_read(cli, command) == []


@pytest.mark.parametrize(
    ("command", "breach"),
    [
        (("runs", "list"), "bot.settings"),
        (("approvals", "list"), "bot.sections"),
        (("pages", "list"), "celpy"),
        (("runs", "list"), "runtime.deliveries"),
        (("runs", "show", "r1"), "slack_bolt"),
        (("approvals", "list"), "bot.cli.policy"),
        (("runs", "list"), "bot.cli.doctor"),
    ],
    ids=[
        "runs list, every setting",
        "approvals list, every section",
        "pages list, CEL",
        "runs list, deliveries",
        "runs show, Slack's app",
        "approvals list, the policy group's commands",
        "runs list, a command outside the groups",
    ],
)
def test_a_read_that_imports_what_it_must_not_fails_the_check(
    cli: Cli, command: tuple[str, ...], breach: str
) -> None:
    parked(cli)

    found = check_read(cli, command, first=breach)

    assert breach in found


def test_policy_check_imports_no_server_or_database(cli: Cli) -> None:
    args = '{"order_id": "4471", "amount_cents": 30000}'

    check = ("--config", str(EXAMPLE), "policy", "check", "issue_refund", args)

    modules = imported(cli, *check, "--requested-by", "U0ASKER")

    assert "celpy" in modules  # it did evaluate the rules
    assert "examples.world" in modules  # and load the example's agents
    client = ("signoff.client", "signoff.models", "cryptography")  # not the example's receipts'
    printing = ("rich", "bot.views")  # it prints plain text (`bot.cli.base.say`)
    assert loaded(modules, (*SERVER, *DATABASE, *client, *printing, *other_groups("policy"))) == []


def callbacks(group: typer.Typer) -> Iterator[Callable[..., Any]]:
    """Every command's function in `group` and its sub-groups, their callbacks too."""
    if group.registered_callback and group.registered_callback.callback:
        yield group.registered_callback.callback
    yield from (c.callback for c in group.registered_commands if c.callback)
    for sub in group.registered_groups:
        assert sub.typer_instance is not None
        yield from callbacks(sub.typer_instance)


def test_commands_annotations_are_objects_not_strings() -> None:
    found = list(callbacks(app))

    stringly = [
        f"{f.__module__}.{f.__qualname__}({name})"
        for f in found
        for name, annotation in inspect.get_annotations(f).items()
        if isinstance(annotation, str)
    ]
    assert len(found) > 40  # every command of every group
    assert stringly == []
