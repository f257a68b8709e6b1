"""An in-doubt page is settled from its Slack card (issue 26.2): the card carries "It
happened" / "It did not happen" when on-call is configured (`SIGNOFF_PAGE_RESOLVERS`); a
press by someone else changes nothing and says so; on-call's press settles the effect and the
page in one write, the card is updated for everyone, and the run goes on to its end. Real
`signoff serve`, the local fake Slack, clicks signed as Slack signs them."""

from __future__ import annotations

import json
import os
from pathlib import Path

from support import SUPPORT
from support.helpers import SIGNOFF
from support.helpers import run_text
from support.slack_harness import BOB
from support.slack_harness import ONCALL
from support.slack_harness import FakeSlackProcess
from support.slack_harness import button
from support.slack_harness import environment
from support.slack_harness import start_server

ON_CALL_PERSON = "U0ONCALL"
HERE = SUPPORT


def agents_env(tmp_path: Path) -> dict[str, str]:
    return {
        "SIGNOFF_AGENTS": "cli_agents:shipper,examples.refund_agent:agent",
        "SIGNOFF_TEST_MARKER": str(tmp_path / "hung"),
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        "SIGNOFF_PAGE_RESOLVERS": ON_CALL_PERSON,
    }


def page_cards(fake: FakeSlackProcess) -> list[dict[str, object]]:
    return [
        m
        for m in fake.messages(ONCALL)
        if (m.get("metadata") or {}).get("event_type") == "signoff_page"  # type: ignore[union-attr]
    ]


def test_on_call_settles_an_in_doubt_page_from_its_card(
    tmp_path: Path, world: Path, fake: FakeSlackProcess
) -> None:
    env = environment(tmp_path, world, 0, fake.base_url) | agents_env(tmp_path)
    started = run_text(
        [SIGNOFF, "runs", "start", "shipper", "Ship p1", "--run-id", "s1", "--json"],
        cwd=tmp_path,
        env=env,
    )
    assert json.loads(started.stdout)["stop_reason"] == "in_doubt", started.stderr
    with start_server(tmp_path, world, fake.base_url, extra=agents_env(tmp_path)) as server:
        [card] = server.wait_until(lambda: page_cards(fake), within=20)
        page_id = card["metadata"]["event_payload"]["page_id"]  # type: ignore[index]
        actions = json.dumps(card["blocks"])
        assert "resolve_happened" in actions
        assert "resolve_did_not_happen" in actions

        status, _, _ = server.slack(
            button("resolve_did_not_happen", page_id, user=BOB, channel=ONCALL)
        )
        assert status == 200
        told = server.wait_until(fake.ephemerals)
        assert "Only on-call" in told[-1]["text"]
        assert server.run("s1")["status"] == "failed"  # nothing changed

        status, _, _ = server.slack(
            button("resolve_did_not_happen", page_id, user=ON_CALL_PERSON, channel=ONCALL)
        )
        assert status == 200
        server.wait_until(lambda: server.run("s1")["status"] == "done", within=20)
        server.wait_until(
            lambda: (
                "Acknowledged"
                in json.dumps(
                    next(m for m in fake.messages(ONCALL) if m["ts"] == card["ts"])["blocks"]
                )
            )
        )
        pages = run_text([SIGNOFF, "pages", "list", "--json"], cwd=tmp_path, env=env)
        assert json.loads(pages.stdout) == []
