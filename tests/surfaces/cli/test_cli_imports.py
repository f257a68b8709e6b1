"""A command imports what it uses: `signoff --help` loads no database, runtime, server or
model code, and the read commands no server, engine, PostgreSQL driver or CEL. Each command
runs in a fresh interpreter (the console script's own `main`), which then lists the modules
it imported."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support.helpers import run_text

from .test_cli import Cli
from .test_cli_decide import fresh_cli, parked

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


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Cli:
    return fresh_cli(tmp_path, monkeypatch)


def imported(cli: Cli, *args: str) -> set[str]:
    done = run_text([sys.executable, "-c", PROBE, *args], cwd=cli.cwd, env=cli.env)
    assert done.returncode == 0, done.stderr
    return set(done.stderr.split())


def loaded(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    """The modules of `packages` (each a package or a module) among `modules`."""
    return sorted(m for m in modules for p in packages if m == p or m.startswith(f"{p}."))


def test_help_imports_no_database_runtime_or_server(cli: Cli) -> None:
    modules = imported(cli, "--help")

    assert "bot.cli.runs" in modules  # the probe sees what the command imported
    heavy = (*SERVER, *DRIVING, "pydantic", "pydantic_settings", "store", "runtime", "rich")
    assert loaded(modules, heavy) == []


@pytest.mark.parametrize(
    "command",
    [("runs", "list"), ("approvals", "list"), ("pages", "list"), ("runs", "show", "r1")],
    ids=" ".join,
)
def test_a_read_imports_no_server_engine_driver_or_cel(cli: Cli, command: tuple[str, ...]) -> None:
    parked(cli)

    modules = imported(cli, *command)

    assert "store.sqlite.store" in modules  # it did read the database
    assert loaded(modules, (*SERVER, *DRIVING)) == []
