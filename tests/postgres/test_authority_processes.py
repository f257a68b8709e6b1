"""Two real `signoff serve` processes on one PostgreSQL database, each with its own
signoff.toml: in A only U0ALICE may approve a refund, in B only U0BOB. A run asked through A
is decided by the approver set of the process that asked through every door of the other
(its HTTP API, its CLI, a signed Slack click): the other's approver is refused at each and
the asker's let through at each; the other's file decides nothing about it. A run started
through A may be driven by either worker (they share the run queue), so each approval's
recorded authority says which process asked, and the doors used are the other one's. The
differing digests are reported by `/readyz`, `/metrics` and `signoff doctor`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.helpers import SIGNOFF
from support.helpers import run_text
from support.slack_harness import FakeSlackProcess
from support.slack_harness import SlackServer
from support.slack_harness import approval_id_of
from support.slack_harness import card_click
from support.slack_harness import environment
from support.slack_harness import start_server

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


@dataclass(frozen=True)
class Side:
    """One process: its server, its folder (its signoff.toml) and the approver its file names."""

    server: SlackServer
    folder: Path
    approver: str


async def test_the_asking_processes_approvers_decide_through_every_door_of_the_other(
    tmp_path: Path, world: Path, fake: FakeSlackProcess, pg_url: str
) -> None:
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    with (
        _serve(a_dir, world, fake, pg_url, "worker-a", ALICE) as a,
        _serve(b_dir, world, fake, pg_url, "worker-b", BOB) as b,
    ):
        sides = (Side(a, a_dir, ALICE), Side(b, b_dir, BOB))
        card, asker, other = _ask(sides, fake, "refund-4471")
        approval_id = approval_id_of(card)

        # the other's API shows who was asked: the asker's approver, under its configuration
        status, view = other.server.api("GET", f"/v1/approvals/{approval_id}")
        assert status == 200, view
        assert view["authority"]["approvers"] == [asker.approver]
        asker_digest = view["authority"]["config_digest"]

        # the other's approver, through its API, its CLI and a Slack click delivered to it
        decision = {"decision": "approved", "by": other.approver}
        path = f"/v1/approvals/{approval_id}/decision"
        status, refused = other.server.api("POST", path, decision)
        assert status == 403, refused
        cli = _decide(other, world, pg_url, approval_id, other.approver)
        assert cli.returncode == 1, cli.stdout + cli.stderr
        assert "not an approver" in cli.stderr
        status, _, _ = other.server.slack(card_click("approve", card, user=other.approver))
        assert status == 200
        told = other.server.wait_until(lambda: fake.told(other.approver))
        assert "not an approver" in told[-1]["text"]
        assert other.server.run("refund-4471")["status"] == "waiting_approval"
        assert _refunds() == []

        # the workers' digests differ, and each reports it
        a.wait_until(lambda: json.loads(a.get("/readyz")[1])["config"]["workers"] == 2)
        status, ready = asker.server.get("/readyz")
        config = json.loads(ready)["config"]
        assert config["agree"] is False
        assert len(config["differ"]) == 1
        assert asker_digest.removeprefix("sha256:").startswith(config["digest"])
        metrics = b.get("/metrics")[1]
        assert "signoff_config_disagreement 1.0" in metrics
        doctor = _cli(a_dir, world, pg_url, "doctor")
        assert doctor.returncode == 1, doctor.stdout + doctor.stderr
        assert "worker worker-a" in doctor.stdout
        assert "worker worker-b" in doctor.stdout
        assert "DIFFERENT" in doctor.stdout

        # the asker's approver, with a signed click delivered to the other: approved, and the
        # refund runs once
        status, _, _ = other.server.slack(card_click("approve", card, user=asker.approver))
        assert status == 200
        other.server.wait_until(lambda: b.run("refund-4471")["status"] == "done", within=30)
        assert len(_refunds()) == 1
        decided = other.server.api("GET", f"/v1/approvals/{approval_id}")[1]
        assert (decided["state"], decided["decided_by"]) == ("approved", asker.approver)

        # two more runs: each asker's approver decides one through the other's API and the
        # other through the other's CLI, each right after the other's approver was refused
        card, asker, other = _ask(sides, fake, "refund-4472")
        path = f"/v1/approvals/{approval_id_of(card)}/decision"
        status, _ = other.server.api("POST", path, {"decision": "approved", "by": other.approver})
        assert status == 403
        status, view = other.server.api(
            "POST", path, {"decision": "approved", "by": asker.approver}
        )
        assert status == 200, view
        assert (view["state"], view["decided_by"]) == ("approved", asker.approver)

        card, asker, other = _ask(sides, fake, "refund-4473")
        refused = _decide(other, world, pg_url, approval_id_of(card), other.approver)
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert "not an approver" in refused.stderr
        approved = _decide(other, world, pg_url, approval_id_of(card), asker.approver)
        assert approved.returncode == 0, approved.stdout + approved.stderr
        for run_id in ("refund-4472", "refund-4473"):
            a.wait_until(lambda run_id=run_id: a.run(run_id)["status"] == "done", within=30)
        assert len(_refunds()) == 3


def _ask(
    sides: tuple[Side, Side], fake: FakeSlackProcess, run_id: str
) -> tuple[dict[str, Any], Side, Side]:
    """Start `run_id` through the first side; its refund's card, the side whose worker
    asked for it (by the approvers its recorded authority names) and the other side."""
    before = len(fake.cards())
    sides[0].server.start_run(run_id, f"Refund order {run_id.removeprefix('refund-')}")
    card = sides[0].server.wait_until(lambda: fake.cards()[before:])[-1]
    status, view = sides[0].server.api("GET", f"/v1/approvals/{approval_id_of(card)}")
    assert status == 200, view
    [approver] = view["authority"]["approvers"]
    asker, other = sides if approver == sides[0].approver else sides[::-1]
    assert asker.approver == approver
    return card, asker, other


def _decide(side: Side, world: Path, pg_url: str, approval_id: str, by: str) -> Any:
    """`signoff approvals decide ID approve --by BY` with the side's signoff.toml."""
    return _cli(
        side.folder, world, pg_url, "approvals", "decide", approval_id, "approve", "--by", by
    )
