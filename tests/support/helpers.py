"""Helpers shared by the end-to-end tests: polling, free ports, a recording notifier, and a
handle on a served API."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from datetime import datetime
from pathlib import Path
from typing import Any
from typing import TypeVar

from aiohttp import web
from aiohttp.test_utils import TestClient

from bot.tasks import Background
from runtime import NullNotifier
from runtime import Runtime
from store import Approval
from store import Page
from store import Run
from store import Store
from store.records import utcnow

T = TypeVar("T")
TOKEN = "e2e-secret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
_BESIDE_PYTHON = Path(sys.executable).with_name("signoff")
SIGNOFF = str(_BESIDE_PYTHON) if _BESIDE_PYTHON.exists() else shutil.which("signoff") or "signoff"
"""The installed console script, preferably the one of the interpreter running the tests."""


def terminate(process: subprocess.Popen[bytes], log: Path, within: float = 10) -> int:
    """SIGTERM `process` and its exit code; killed, and the test failed with its `log`, if it
    does not exit `within` seconds."""
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=within)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise AssertionError(f"no exit within {within:g}s of SIGTERM:\n{log.read_text()}") from None


def clean_env(*prefixes: str, drop: Sequence[str] = ()) -> dict[str, str]:
    """This process's environment without the variables that start with `prefixes` or are
    named in `drop`: a shell whose own settings cannot leak into the command under test."""
    return {k: v for k, v in os.environ.items() if not k.startswith(prefixes) and k not in drop}


def run_text(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """Run a command to its end with its output captured as text; the caller judges the
    exit code."""
    return subprocess.run(
        list(argv),
        cwd=cwd,
        env=None if env is None else dict(env),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@dataclass
class Done:
    """What a `signoff` command did: its exit code and its output."""

    code: int
    out: str
    err: str


def signoff_in(folder: Path, path: Path, *args: str) -> Done:
    """`signoff ARGS` run in `folder` on its own SQLite file and world, with `path` on the
    import path, and no SIGNOFF_ or SLACK_ variable of this shell."""
    env = clean_env("SIGNOFF_", "SLACK_") | {
        "SIGNOFF_DATABASE_URL": f"sqlite:///{folder / 'signoff.db'}",
        "SIGNOFF_WORLD_DB": str(folder / "world.db"),
        "PYTHONPATH": str(path),
    }
    done = run_text([SIGNOFF, *args], cwd=folder, env=env)
    return Done(done.returncode, done.stdout, done.stderr)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def listening(port: int, *, within: float = 60.0) -> None:
    """Until something accepts connections on 127.0.0.1:`port` (a server just started)."""
    deadline = time.monotonic() + within
    while True:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            if time.monotonic() > deadline:
                raise AssertionError(f"nothing listens on port {port} after {within}s") from None
            await asyncio.sleep(0.05)
        else:
            writer.close()
            return


async def eventually(
    check: Callable[[], Awaitable[T | None]], *, within: float = 5.0, every: float = 0.02
) -> T:
    """Poll `check` until it returns something truthy; fail after `within` seconds."""
    deadline = time.monotonic() + within
    while True:
        found = await check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {within}s (last value {found!r})")
        await asyncio.sleep(every)


class Finished(NullNotifier):
    """Says when a run this process drove finished."""

    def __init__(self) -> None:
        self.finished: dict[str, asyncio.Event] = {}

    def event(self, run_id: str) -> asyncio.Event:
        return self.finished.setdefault(run_id, asyncio.Event())

    async def run_finished(self, run: Run) -> None:
        self.event(run.id).set()


@dataclass
class Told:
    what: str
    approval: Approval | None
    at: float
    escalated: bool = False
    wall: datetime = field(default_factory=utcnow)


@dataclass
class Recorder(NullNotifier):
    """A Notifier that remembers what it was told, and when (monotonic and wall clock)."""

    told: list[Told] = field(default_factory=list)

    def of(self, what: str) -> list[Told]:
        return [t for t in self.told if t.what == what]

    async def approval_requested(self, approval: Approval, run: Run | None) -> None:
        self.told.append(Told("requested", approval, time.monotonic()))

    async def approval_decided(self, approval: Approval, run: Run | None) -> None:
        self.told.append(Told("decided", approval, time.monotonic()))

    async def reminder_due(self, approval: Approval, run: Run | None, *, escalated: bool) -> None:
        self.told.append(Told("reminder", approval, time.monotonic(), escalated))

    async def effect_needs_human(self, page: Page, run: Run | None) -> None:
        self.told.append(Told("page", None, time.monotonic()))


@dataclass
class Api:
    client: TestClient[web.Request, web.Application]
    rt: Runtime
    background: Background
    store: Store

    async def counts(self) -> tuple[int, int]:
        """How many runs and approvals the store holds."""
        runs = await self.store.list_runs(None, limit=10_000)
        approvals = await self.store.list_approvals(run_id=None, state=None)
        return len(runs), len(approvals)

    async def parked(self, run_id: str) -> dict[str, Any]:
        """Wait until the run waits for approval; return its API view."""

        async def check() -> dict[str, Any] | None:
            response = await self.client.get(f"/v1/runs/{run_id}", headers=AUTH)
            view = await response.json()
            return view if view["status"] == "waiting_approval" else None

        return await eventually(check)
