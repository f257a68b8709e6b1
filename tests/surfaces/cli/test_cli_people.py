"""The CLI names people as Slack does: with a bot token configured it asks the workspace
(`users.info`, the fake Slack here) for the names of the people it prints, and shows an id
only for someone Slack does not know, or when no token is set.

`signoff` runs as a real subprocess against a real fake Slack process."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .test_cli import Cli
from .test_cli_decide import decide
from .test_cli_decide import fresh_cli


@pytest.fixture
def slack_url(tmp_path: Path) -> Iterator[str]:
    """The fake Slack's Web API, whose workspace knows Bob and Riley (not Zed)."""
    ready = tmp_path / "fake-slack.url"
    args = ["--port", "0", "--ready-file", str(ready)]
    people = ["--user", "U0BOB=bob", "--user", "U0RILEY=riley"]
    fake = subprocess.Popen([sys.executable, "-m", "bot.dev.slack", *args, *people])
    try:
        deadline = time.monotonic() + 15
        while not ready.exists():
            assert fake.poll() is None, "the fake Slack exited"
            assert time.monotonic() < deadline, "the fake Slack did not start"
            time.sleep(0.05)
        yield ready.read_text("utf-8").strip()
    finally:
        fake.terminate()
        fake.wait(10)


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Cli:
    return fresh_cli(tmp_path, monkeypatch)


def test_the_cli_shows_names_where_slack_does(cli: Cli, slack_url: str) -> None:
    slack = {"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_API_URL": slack_url}
    for run_id, by in (("r1", "U0RILEY"), ("r2", "U0ZED")):
        started = cli(
            "runs",
            "start",
            "refund-agent",
            f"Refund order {run_id[1]}",
            "--run-id",
            run_id,
            "--requested-by",
            by,
        )
        assert started.code == 0, started.err
    [pending] = cli.inspect("list_approvals", run_id="r1", state="pending")

    decided = decide(cli, pending.id, "decline", "--by", "U0BOB", "--reason", "no", **slack)
    assert decided.code == 0, decided.err
    assert "@bob" in decided.out
    assert "U0BOB" not in decided.out

    shown = cli("runs", "show", "r1", **slack)
    assert "@riley" in shown.out, shown.out  # who asked
    assert "by @bob" in shown.out  # who decided
    assert "U0RILEY" not in shown.out
    assert "U0ZED" in cli("runs", "show", "r2", **slack).out  # Slack does not know Zed

    listed = cli("approvals", "list", **slack)
    assert "@bob" in listed.out
    assert "U0BOB" in cli("approvals", "list").out  # no token: ids, never a guess
