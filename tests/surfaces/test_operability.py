"""Operating `signoff serve`: its Prometheus metrics move by exactly what a refund run did,
`/readyz` fails while the database cannot be reached and recovers, its JSON log lines parse
and carry the ids, and no secret or sensitive argument reaches the log, Slack, the API, the
CLI or the audit export (while the tool receives the argument whole).

`signoff serve` runs as a real process against the local fake Slack; clicks are signed as
Slack signs them."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from support import SUPPORT
from support.helpers import SIGNOFF
from support.helpers import TOKEN
from support.helpers import clean_env
from support.helpers import run_text
from support.ops_agents import CARD
from support.slack_harness import APP_TOKEN
from support.slack_harness import APPROVALS
from support.slack_harness import BOB
from support.slack_harness import BOT_TOKEN
from support.slack_harness import POLICY
from support.slack_harness import REQUESTER
from support.slack_harness import SIGNING_SECRET
from support.slack_harness import FakeSlackProcess
from support.slack_harness import SlackServer
from support.slack_harness import approval_id_of
from support.slack_harness import button
from support.slack_harness import start_server

HERE = SUPPORT
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]
CARD_POLICY = f"""
[policies.tools.charge_card]
channel = "{APPROVALS}"
approvers = ["{BOB}"]
"""


@pytest.fixture
def server(tmp_path: Path, world: Path, fake: FakeSlackProcess) -> Iterator[SlackServer]:
    extra = {
        "SIGNOFF_AGENTS": "examples.refund_agent:agent,ops_agents:card_agent",
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        "SIGNOFF_LOG_FORMAT": "json",
        "SIGNOFF_TEST_MARKER": str(tmp_path / "charged.json"),
    }
    policy = POLICY + CARD_POLICY
    with start_server(tmp_path, world, fake.base_url, extra=extra, policy=policy) as running:
        yield running


def scrape(server: SlackServer) -> Samples:
    status, text = server.get("/metrics")
    assert status == 200
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def moved(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


def park(
    server: SlackServer, fake: FakeSlackProcess, agent: str, run_id: str, task: str
) -> dict[str, Any]:
    status, view = server.api(
        "POST",
        "/v1/runs",
        {"agent": agent, "task": task, "run_id": run_id, "requested_by": REQUESTER},
    )
    assert status == 201, view
    server.wait_until(lambda: server.run(run_id)["status"] == "waiting_approval")
    return dict(server.wait_until(lambda: [c for c in fake.cards() if run_id in json.dumps(c)])[0])


def approve(server: SlackServer, card: dict[str, Any], run_id: str) -> str:
    approval_id = approval_id_of(card)
    status, body, _ = server.slack(button("approve", approval_id, user=BOB, ts=card["ts"]))
    assert status == 200, body
    server.wait_until(lambda: server.run(run_id)["status"] == "done")
    return approval_id


def test_metrics_move_by_what_a_refund_run_with_an_approval_did(
    server: SlackServer, fake: FakeSlackProcess
) -> None:
    before = scrape(server)
    card = park(server, fake, "refund-agent", "order-m1", "Refund order 4471")
    parked = scrape(server)
    assert (
        value(parked, "signoff_approvals_pending") == value(before, "signoff_approvals_pending") + 1
    )
    assert moved(before, parked, "signoff_runs", status="waiting_approval") == 1
    assert moved(before, parked, "signoff_approvals_requested_total") == 1

    approval_id = approve(server, card, "order-m1")
    server.wait_until(lambda: value(scrape(server), "signoff_outbox_backlog") == 0)
    after = scrape(server)

    run = server.run("order-m1")
    usage = run["usage"]
    agent = {"agent": "refund-agent"}
    assert moved(before, after, "signoff_steps_total", **agent) == usage["steps"] > 0
    assert moved(before, after, "signoff_step_duration_seconds_count", **agent) == usage["steps"]
    assert (
        moved(before, after, "signoff_model_tokens_total", **agent, kind="input")
        == (usage["input_tokens"])
    )
    assert (
        moved(before, after, "signoff_model_tokens_total", **agent, kind="output")
        == (usage["output_tokens"])
    )
    assert moved(before, after, "signoff_model_cost_dollars_total", **agent) == pytest.approx(
        usage["cost"]
    )
    # The refund (reversible, approved) and the e-mail (irreversible, waived): one each.
    assert (
        moved(
            before, after, "signoff_effects_total", classification="reversible", outcome="completed"
        )
        == 1
    )
    assert (
        moved(
            before,
            after,
            "signoff_effects_total",
            classification="irreversible",
            outcome="completed",
        )
        == 1
    )
    assert (
        moved(
            before, after, "signoff_effects_total", classification="irreversible", outcome="failed"
        )
        == 0
    )
    assert moved(before, after, "signoff_approvals_decided_total", outcome="approved") == 1
    assert moved(before, after, "signoff_approvals_decided_total", outcome="declined") == 0
    assert moved(before, after, "signoff_approval_decision_seconds_count") == 1
    assert moved(before, after, "signoff_runs_finished_total", status="done") == 1
    assert value(after, "signoff_approvals_pending") == value(before, "signoff_approvals_pending")
    assert value(after, "signoff_runs", status="waiting_approval") == 0
    assert value(after, "signoff_runs", status="running") == 0
    assert value(after, "signoff_effects_in_doubt") == 0
    assert value(after, "signoff_pages_open") == 0
    assert value(after, "signoff_outbox_oldest_undelivered_age_seconds") == 0
    assert moved(before, after, "signoff_callback_failures_total") == 0
    # The audit trail agrees with the effect counters.
    status, trail = server.api("GET", "/v1/audit?run_id=order-m1")
    assert status == 200
    executed = [e for e in trail["events"] if e["action"] == "effect_completed"]
    assert len(executed) == 2
    assert [e["approval_id"] for e in executed] == [approval_id, None]


def test_readyz_fails_while_the_database_is_unreachable_and_recovers(
    server: SlackServer, tmp_path: Path
) -> None:
    assert server.get("/healthz") == (200, '{"ok": true}')
    ready = json.loads(server.wait_until(lambda: (r := server.get("/readyz"))[0] == 200 and r)[1])
    # which configuration this worker runs, and that no other live worker runs another
    assert ready == {"ready": True, "config": ready["config"]}
    assert (ready["config"]["workers"], ready["config"]["agree"]) == (1, True)
    database = tmp_path / "signoff.db"
    away = tmp_path / "moved-away.db"

    database.rename(away)  # the volume is gone, as far as a new connection can tell
    try:
        status, body = server.get("/readyz")
        assert (status, json.loads(body)) == (503, {"ready": False, "failing": ["database"]})
        assert server.get("/healthz")[0] == 200  # the process itself answers
    finally:
        away.rename(database)

    status, body = server.get("/readyz")
    assert (status, json.loads(body)) == (200, ready)
    lines = [json.loads(line) for line in server.log.read_text().splitlines() if line.strip()]
    told = [line["message"] for line in lines if line["logger"] == "signoff.health"]
    assert told[0].startswith("not ready: ")
    assert "unreachable" in told[0]
    assert told[1] == "ready again"


def test_json_logs_carry_ids_and_no_secret_or_sensitive_argument_leaks(
    server: SlackServer, fake: FakeSlackProcess, tmp_path: Path
) -> None:
    card = park(server, fake, "card-agent", "charge-1", "Charge order A1")
    approval_id = approve(server, card, "charge-1")
    server.wait_until(lambda: value(scrape(server), "signoff_outbox_backlog") == 0)
    # The tool received the number whole.
    received = json.loads((tmp_path / "charged.json").read_text())
    assert received == {"order_id": "A1", "card_number": CARD}

    lines = [json.loads(line) for line in server.log.read_text().splitlines() if line.strip()]
    requested = [line for line in lines if line.get("event") == "approval_requested"]
    assert [(line["approval_id"], line["run_id"]) for line in requested] == [
        (approval_id, "charge-1")
    ]
    decided = [line for line in lines if line.get("event") == "approval_decided"]
    assert [line["approval_id"] for line in decided] == [approval_id]
    finished = [line for line in lines if line.get("event") == "run_finished"]
    assert [(line["run_id"], line["step"]) for line in finished] == [("charge-1", 2)]
    for line in lines:
        assert {"time", "level", "logger", "message"} <= set(line)

    surfaces = {
        "log": server.log.read_text(),
        "slack messages": json.dumps(fake._get("messages")),
        "slack ephemerals": json.dumps(fake.ephemerals()),
        "slack views": json.dumps(fake.views()),
        "api run": json.dumps(server.api("GET", "/v1/runs/charge-1")),
        "api approval": json.dumps(server.api("GET", f"/v1/approvals/{approval_id}")),
        "api audit": json.dumps(server.api("GET", "/v1/audit?run_id=charge-1")),
        "console run": json.dumps(server.api("GET", "/v1/console/runs/charge-1")),
        "export jsonl": cli(tmp_path, "audit", "export"),
        "export csv": cli(tmp_path, "audit", "export", "--format", "csv"),
        "cli approvals": cli(tmp_path, "approvals", "list"),
        "cli approvals json": cli(tmp_path, "approvals", "list", "--json"),
        "cli run json": cli(tmp_path, "runs", "show", "charge-1", "--json"),
        "cli history": cli(tmp_path, "runs", "history", "charge-1"),
        "cli history json": cli(tmp_path, "runs", "history", "charge-1", "--json"),
    }
    assert "[sensitive]" in surfaces["slack messages"]
    assert "[sensitive]" in surfaces["export jsonl"]
    assert "[sensitive]" in surfaces["api approval"]
    assert "[sensitive]" in surfaces["cli approvals json"]
    assert "[sensitive]" in surfaces["cli history json"]
    assert "[sensitive]" in surfaces["console run"]
    for secret in (CARD, SIGNING_SECRET, TOKEN, BOT_TOKEN, APP_TOKEN):
        for surface, text in surfaces.items():
            assert secret not in text, f"{secret!r} appears in the {surface}"


def cli(tmp_path: Path, *args: str) -> str:
    env = clean_env("SIGNOFF_", "SLACK_")
    env["SIGNOFF_DATABASE_URL"] = f"sqlite:///{tmp_path / 'signoff.db'}"
    done = run_text([SIGNOFF, *args], cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr
