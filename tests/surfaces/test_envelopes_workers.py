"""One budget, two workers at once: a $200 envelope handed out with `signoff envelopes
create`, and 30 refunds of $10 driven by two real `signoff serve` workers on one database
(PostgreSQL, and a SQLite file). Exactly 20 are approved at once, citing it; the other 10
ask a person; the envelope says $200 used by 20 calls, the provider refunded $200, and its
exhaustion is audited once. `signoff envelopes list` and `revoke` say the same."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support import spend_agents
from support.helpers import SIGNOFF
from support.pg_support import database_url
from support.serve_workers import Worker
from support.serve_workers import worker_env

from runtime import Runtime
from store import ApprovalState
from store import RunStatus
from store import open_store
from tests.crash.test_limits_crash import wait_settled

RUNS = 30
CONFIG = """
agents = ["spend_agents:agent"]

[policies.default]
approvers = ["U0APPROVER", "U0LEAD"]
"""


@pytest.fixture(params=["sqlite", "postgres"])
async def database(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    async for url in database_url(request.param, tmp_path, "signoff_envelopes"):
        yield url


def signoff(env: dict[str, str], where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SIGNOFF, *args], env=env, cwd=where, capture_output=True, text=True, timeout=120
    )


async def create_runs(url: str) -> None:
    async with open_store(url) as store:
        rt = Runtime(store, [spend_agents.agent])
        for i in range(RUNS):
            task = spend_agents.refund(f"c{i}", f"o-{i}", 1000)
            await rt.create("refunds", task, run_id=f"refund-{i}", requested_by="U0ASKER")


@pytest.mark.slow
async def test_two_workers_use_one_budget_exactly(
    database: str, tmp_path: Path, world: Path, workers: list[Worker]
) -> None:
    (tmp_path / "signoff.toml").write_text(CONFIG)
    env = worker_env(database, world)
    await create_runs(database)
    made = signoff(
        env, tmp_path, "envelopes", "create", "issue_refund", "--when", "true",
        "--by", "U0APPROVER", "--reason", "refund backlog", "--up-to", "200", "--json",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    envelope = json.loads(made.stdout)
    assert (envelope["state"], envelope["max_amount"]) == ("active", 20_000)
    refused = signoff(
        env, tmp_path, "envelopes", "create", "issue_refund", "--when", "true",
        "--by", "U0ASKER", "--reason", "mine", "--calls", "3",
    )  # fmt: skip
    assert refused.returncode == 1
    assert "U0ASKER may not hand out envelopes for issue_refund" in refused.stderr

    workers += [Worker("worker-a", env, tmp_path), Worker("worker-b", env, tmp_path)]
    for worker in workers:
        worker.start()
    statuses = await asyncio.to_thread(wait_settled, database, 120)

    assert len(statuses) == RUNS
    async with open_store(database, migrate=False) as store:
        approvals = await store.list_approvals()
        kept = await store.get_envelope(envelope["id"])
        events = [e for e in await store.list_events() if e.action.startswith("envelope_")]
    by_envelope = [a for a in approvals if a.rule and a.rule.envelope_id == envelope["id"]]
    asked = [a for a in approvals if a.state == ApprovalState.PENDING]
    assert len(by_envelope) == 20
    assert all(a.state == ApprovalState.APPROVED for a in by_envelope)
    assert {statuses[a.run_id or ""] for a in by_envelope} == {RunStatus.DONE}
    assert len(asked) == 10
    assert {statuses[a.run_id or ""] for a in asked} == {RunStatus.WAITING_APPROVAL}
    assert (kept.used_amount, kept.used_calls, kept.exhausted) == (20_000, 20, True)
    assert spend_agents.refunded() == 20_000
    assert [e.action for e in events] == ["envelope_made", "envelope_exhausted"]

    listed = signoff(env, tmp_path, "envelopes", "list")
    assert f"{envelope['id']} exhausted: issue_refund when true: $200 of $200 used" in listed.stdout
    revoked = signoff(env, tmp_path, "envelopes", "revoke", envelope["id"], "--by", "U0LEAD")
    assert revoked.returncode == 1  # neither its author nor a rule-writer
    assert "U0LEAD may not revoke" in revoked.stderr
    revoked = signoff(env, tmp_path, "envelopes", "revoke", envelope["id"], "--by", "U0APPROVER")
    assert revoked.returncode == 0, revoked.stderr
    assert f"{envelope['id']} revoked" in revoked.stdout
