"""Real `signoff serve` workers a test starts, kills (SIGKILL, mid-flight) and starts again on
one database; the `workers` fixture (tests/conftest.py) kills whatever is left at the end."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

from . import SUPPORT
from .helpers import SIGNOFF
from .helpers import clean_env
from .helpers import free_port


def worker_env(database: str, world: Path, **more: str) -> dict[str, str]:
    """The environment of an API-only worker on `database` running the spend agent (its tools
    slowed a little, so kills land mid-flight) against the outside world `world`."""
    env = clean_env("SIGNOFF_", "SLACK_")
    return env | {
        "SIGNOFF_DATABASE_URL": database,
        "SIGNOFF_API_ONLY": "true",
        "SIGNOFF_API_TOKEN": "t0ken",
        "SIGNOFF_WORKER_POLL_SECONDS": "0.2",
        "SIGNOFF_WORLD_DB": str(world),
        "SIGNOFF_SPEND_TOOL_DELAY": "0.05",
        "SIGNOFF_WORKER_CAPACITY": "8",
        "PYTHONPATH": os.pathsep.join([str(SUPPORT), env.get("PYTHONPATH", "")]),
        **more,
    }


def wait_healthy(
    name: str, process: subprocess.Popen[bytes], port: int | str, log: Path, within: float = 30
) -> None:
    """Until `signoff serve` (`process`, its output in `log`) answers /healthz on `port`; its
    log's tail is the failure message if it dies or `within` seconds pass."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text()[-3000:]
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"{name} not up in {within}s: {log.read_text()[-3000:]}")


class Worker:
    """One `signoff serve` process, named `SIGNOFF_WORKER_ID`; its output in `NAME.log`."""

    def __init__(self, name: str, env: dict[str, str], where: Path) -> None:
        self.name, self.env, self.where = name, env | {"SIGNOFF_WORKER_ID": name}, where
        self.process: subprocess.Popen[bytes] | None = None
        self.log = where / f"{name}.log"

    def start(self, *, wait: bool = True) -> None:
        port = str(free_port())
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [SIGNOFF, "serve"],
                env=self.env | {"SIGNOFF_PORT": port},
                cwd=self.where,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        if wait:
            self.wait_up(port)

    def wait_up(self, port: str) -> None:
        assert self.process is not None
        wait_healthy(self.name, self.process, port, self.log)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
