"""`signoff serve` against a fake Slack of its own, for a module that starts them once; and the
payloads that tests deliver to it beyond a card's click: a click in an App Home, an event, and
an envelope over Socket Mode."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .slack_harness import BOB
from .slack_harness import POLICY
from .slack_harness import FakeSlackProcess
from .slack_harness import SlackServer
from .slack_harness import form
from .slack_harness import start_server


@contextmanager
def serving(
    folder: Path, *, extra: dict[str, str] | None = None, policy: str = POLICY
) -> Iterator[tuple[SlackServer, FakeSlackProcess]]:
    """The fake Slack, then `signoff serve` pointed at it, both in `folder` (its world too);
    on the way out the server is stopped with SIGTERM (it must exit in time) unless it has
    already exited, and the fake Slack is stopped whatever happened."""
    fake = FakeSlackProcess(folder)
    try:
        server = start_server(
            folder, folder / "world.db", fake.base_url, extra=extra, policy=policy
        )
        try:
            yield server, fake
        finally:
            if server.process.poll() is None:
                server.stop()
    finally:
        fake.stop()


def home_button(action: str, block_id: str, value: str, *, user: str, trigger_id: str) -> bytes:
    """A click on a button in the clicker's App Home (a view: no channel, no message)."""
    payload = {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "team_id": "T0SIGNOFF"},
        "api_app_id": "A0SIGNOFF",
        "token": "legacy-verification-token",
        "container": {"type": "view", "view_id": "V0HOME"},
        "trigger_id": trigger_id,
        "team": {"id": "T0SIGNOFF", "domain": "signoff"},
        "view": {"id": "V0HOME", "type": "home", "blocks": []},
        "actions": [
            {
                "action_id": action,
                "block_id": block_id,
                "value": value,
                "type": "button",
                "action_ts": str(time.time()),
            }
        ],
    }
    return form({"payload": json.dumps(payload)})


def home_opened(event_id: str) -> dict[str, Any]:
    """The `app_home_opened` event for Bob's Home tab, as Slack delivers it."""
    return {
        "type": "event_callback",
        "event_id": event_id,
        "event_time": int(time.time()),
        "event": {"type": "app_home_opened", "user": BOB, "channel": "D0BOB", "tab": "home"},
    }


def over_socket(
    server: SlackServer, fake: FakeSlackProcess, kind: str, payload: dict[str, Any]
) -> dict[str, Any]:
    """Deliver `payload` as an envelope of `kind` over the fake's Socket Mode connection, once
    the server is connected; the server's acknowledgement."""
    order = {"type": kind, "payload": payload}
    return dict(
        server.wait_until(
            lambda: (got := fake.control("socket", order)) and "envelope_id" in got and got
        )
    )
