"""Real `signoff serve` workers a test starts, kills (SIGKILL, mid-flight) and starts again on
one database; the `workers` fixture (tests/conftest.py) kills whatever is left at the end."""

from __future__ import annotations

import signal
import subprocess
import time
import urllib.request
from pathlib import Path

from .helpers import SIGNOFF, free_port


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
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log.read_text()[-3000:]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                    return
            except OSError:
                time.sleep(0.05)
        raise AssertionError(f"{self.name} not up: {self.log.read_text()[-3000:]}")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
