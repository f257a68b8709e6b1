"""Each stack's example (`examples/stacks`) run as its docs say, against the API served over
TCP: it asks, a human approves its card (here from the server's side), and it goes on."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.helpers import TOKEN
from support.helpers import run_text
from support.live_api import LiveApi

ROOT = Path(__file__).parents[3]
EXAMPLES = {
    "decorator": "refunded 2500 cents on order 4471",
    "pydantic_ai": "The tool said: refunded 2500 cents on order 4471",
    "langgraph": "refunded 2500 cents on order 4471",
    "openai_agents": "The tool said: refunded 2500 cents on order 4471",
    "mcp_client": "delete_file (ok): deleted /tmp/report.txt",
}


@pytest.fixture
def live(db_url: str, world: Path) -> Iterator[LiveApi]:
    server = LiveApi(db_url).start()
    yield server
    server.stop()


def approve_everything(live: LiveApi, stop: threading.Event) -> threading.Thread:
    def act() -> None:
        while not stop.is_set():
            for approval in live.run(lambda: live.rt.approvals(state="pending")):
                live.call(live.rt.decide(approval.id, "approved", by="U0BOSS"))
            time.sleep(0.05)

    thread = threading.Thread(target=act, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_the_example_asks_is_approved_and_goes_on(live: LiveApi, name: str) -> None:
    stop = threading.Event()
    approver = approve_everything(live, stop)
    env = dict(os.environ) | {"SIGNOFF_URL": live.url, "SIGNOFF_API_TOKEN": TOKEN}
    try:
        ran = run_text(
            [sys.executable, "-m", f"examples.stacks.{name}"], cwd=ROOT, env=env, timeout=120
        )
    finally:
        stop.set()
        approver.join(5)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "Unclosed" not in ran.stderr, ran.stderr[-2000:]
    assert EXAMPLES[name] in ran.stdout, ran.stdout
    assert "in signoff dev" in ran.stdout  # it told the user where to decide
    assert live.run(lambda: live.rt.approvals(state="approved"))
