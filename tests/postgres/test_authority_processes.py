"""Two real `signoff serve` processes on one PostgreSQL database, each with its own
signoff.toml: in A only U0ALICE may approve a refund, in B only U0BOB. A run asked through A
is decided by A's approver set through every door of B (its HTTP API, its CLI, a signed
Slack click); B's file decides nothing about it. The differing digests are reported by
`/readyz`, `/metrics` and `signoff doctor`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support.helpers import SIGNOFF, run_text
from support.slack_harness import (
    FakeSlackProcess,
    SlackServer,
    approval_id_of,
    card_click,
    environment,
    start_server,
)

from examples import world as outside

REQUESTER, ALICE, BOB = "U0REQ", "U0ALICE", "U0BOB"


def _policy(approver: str) -> str:
    return f'[policies.tools.issue_refund]\napprovers = ["{approver}"]\n'


def _serve(
    folder: Path, world: Path, fake: FakeSlackProcess, pg_url: str, name: str, approver: str
) -> SlackServer:
    folder.mkdir()
    extra = {"SIGNOFF_DATABASE_URL": pg_url, "SIGNOFF_WORKER_ID": name}
    return start_server(folder, world, fake.base_url, extra=extra, policy=_policy(approver))


def _cli(folder: Path, world: Path, pg_url: str, *args: str) -> Any:
    env = environment(folder, world, 0, "http://127.0.0.1:9/api/")
    env |= {"SIGNOFF_DATABASE_URL": pg_url, "SIGNOFF_CONFIG": str(folder / "signoff.toml")}
    return run_text([SIGNOFF, *args], env=env, cwd=folder)


def _refunds() -> list[Any]:
    return [p for p in outside.payments() if p[0] == "refund"]


async def test_the_asking_processes_approvers_decide_through_every_door_of_the_other(
    tmp_path: Path, world: Path, fake: FakeSlackProcess, pg_url: str
) -> None:
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    with (
        _serve(a_dir, world, fake, pg_url, "worker-a", ALICE) as a,
        _serve(b_dir, world, fake, pg_url, "worker-b", BOB) as b,
    ):
        a.start_run("refund-4471", requested_by=REQUESTER)
        [card] = a.wait_until(lambda: fake.cards())
        approval_id = approval_id_of(card)

        # B's API shows who was asked: A's approver, under A's configuration
        status, view = b.api("GET", f"/v1/approvals/{approval_id}")
        assert status == 200, view
        assert view["authority"]["approvers"] == [ALICE]
        a_digest = view["authority"]["config_digest"]

        # B's approver, through B's API, B's CLI and a Slack click delivered to B: refused
        decision = {"decision": "approved", "by": BOB}
        status, refused = b.api("POST", f"/v1/approvals/{approval_id}/decision", decision)
        assert status == 403, refused
        cli = _cli(b_dir, world, pg_url, "approvals", "decide", approval_id, "approve", "--by", BOB)
        assert cli.returncode == 1, cli.stdout + cli.stderr
        assert "not an approver" in cli.stderr
        status, _, _ = b.slack(card_click("approve", card, user=BOB))
        assert status == 200
        told = b.wait_until(lambda: [e for e in fake.ephemerals() if e["user"] == BOB])
        assert "not an approver" in told[-1]["text"]
        assert b.run("refund-4471")["status"] == "waiting_approval"
        assert _refunds() == []

        # the workers' digests differ, and each reports it
        a.wait_until(lambda: json.loads(a.get("/readyz")[1])["config"]["workers"] == 2)
        status, ready = a.get("/readyz")
        config = json.loads(ready)["config"]
        assert config["agree"] is False
        assert len(config["differ"]) == 1
        assert a_digest.removeprefix("sha256:").startswith(config["digest"])
        metrics = b.get("/metrics")[1]
        assert "signoff_config_disagreement 1.0" in metrics
        doctor = _cli(a_dir, world, pg_url, "doctor")
        assert doctor.returncode == 1, doctor.stdout + doctor.stderr
        assert "worker worker-a" in doctor.stdout
        assert "worker worker-b" in doctor.stdout
        assert "DIFFERENT" in doctor.stdout

        # A's approver, with a signed click delivered to B: approved, and the refund runs once
        status, _, _ = b.slack(card_click("approve", card, user=ALICE))
        assert status == 200
        b.wait_until(lambda: b.run("refund-4471")["status"] == "done", within=30)
        assert len(_refunds()) == 1
        decided = b.api("GET", f"/v1/approvals/{approval_id}")[1]
        assert (decided["state"], decided["decided_by"]) == ("approved", ALICE)
