"""`signoff dev` as a real subprocess, and headless Chromium (Debian's chromium and
chromium-driver, driven by selenium) that may reach nothing but 127.0.0.1."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from .helpers import SIGNOFF
from .helpers import clean_env
from .helpers import free_port
from .slack_harness import wait_while_alive

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
REQUESTER, APPROVER, OUTSIDER = "U0RILEY", "U0BOB", "U0EVE"
NEEDS_CHROMIUM = pytest.mark.skipif(
    not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)),
    reason="needs Debian's chromium and chromium-driver (.ci/run installs them)",
)
"""The mark of a test that drives the page in a real Chromium."""


class DevServer:
    def __init__(
        self,
        folder: Path,
        port: int | None = None,
        env: dict[str, str] | None = None,
        args: Sequence[str] = (),
    ) -> None:
        """`env`: variables to add (SIGNOFF_AGENTS, say) to a clean environment; `args`:
        options of `signoff dev` after `--port` (`--config PATH`, say)."""
        self.folder = folder
        self.port = port or free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = folder / f"dev-{self.port}-{time.monotonic_ns()}.log"
        clean = clean_env("SIGNOFF_", "SLACK_")
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                [SIGNOFF, "dev", "--port", str(self.port), *args],
                cwd=folder,
                env=clean | (env or {}),
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self.wait_until(self.healthy, within=30)

    def healthy(self) -> bool:
        try:
            return self.get("/healthz")[0] == 200
        except (urllib.error.URLError, ConnectionError):
            return False

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
        return _send(urllib.request.Request(self.base + path, headers=headers or {}))

    def post(self, path: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, Any]:
        request = urllib.request.Request(
            self.base + path, data=json.dumps(body).encode(), method="POST"
        )
        request.add_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        return _send(request)

    def wait_until(self, check: Callable[[], Any], within: float = 15.0) -> Any:
        return wait_while_alive(self.process, self.log, check, within)

    def interrupt(self, within: float = 15.0) -> int:
        """Ctrl-C, as a person stops it; the exit code."""
        self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(timeout=within)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"no exit within {within}s of Ctrl-C") from None


def card_button(card: dict[str, Any], action_id: str) -> dict[str, Any] | None:
    """The button `action_id` of a card in the dev workspace, if it has one."""
    for block in card["blocks"]:
        for element in block.get("elements", []):
            if element.get("action_id") == action_id:
                return dict(element)
    return None


def click(
    dev: DevServer,
    card: dict[str, Any],
    action_id: str,
    *,
    user: str = APPROVER,
    channel: str = "C0APPROVALS",
    **extra: Any,
) -> tuple[int, Any]:
    """Click the card's button `action_id` as `user` in `channel` (the card must show it)."""
    button = card_button(card, action_id)
    assert button is not None
    order = {
        "user": user,
        "channel": channel,
        "ts": card["ts"],
        "action_id": action_id,
        "value": button["value"],
        **extra,
    }
    return dev.post("/dev/api/action", order)


def _send(request: urllib.request.Request) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            raw = response.read()
            return response.status, _parsed(raw)
    except urllib.error.HTTPError as exc:
        return exc.code, _parsed(exc.read())


def _parsed(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return raw.decode(errors="replace")


def chromium(downloads: Path) -> Any:
    """Headless Chromium that resolves no host but 127.0.0.1 and localhost, with its
    network log on, so a test can list every request the page made."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost",
        "--disable-background-networking",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1600,1000",
        f"--user-data-dir={downloads / 'chromium-profile'}",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def requested_urls(driver: Any) -> list[str]:
    """Every URL the browser sent a request for since the last call (its network log)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls
