"""A dead worker's late post does not stay: two real `signoff serve` workers share one
PostgreSQL database and the fake Slack (its own process); the worker whose card post hangs
is SIGKILLed mid-post, the other takes the row once the claim lapses, finds nothing yet and
posts; the dead worker's post lands later, and the survivor's reconciler, which looks once
more within the claim's horizon, deletes that younger duplicate: one card visible soon after,
the recorded one, with no process restarted."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from support.pg_support import migrate
from support.slack_harness import APPROVALS
from support.slack_harness import REQUESTER
from support.slack_harness import FakeSlackProcess
from support.slack_harness import approval_id_of
from support.slack_harness import start_server

asyncpg = pytest.importorskip("asyncpg")
pytestmark = pytest.mark.slow

CLAIM = 3.0  # seconds: sweeps last 4 claims, a worker's start-up sweeps too
LANDS_AFTER = 9.0
"""The hung post lands this long after it was sent: past the survivor's start-up sweeps
(its start plus 4 claims) and past its own look-up after the claim lapsed."""


def test_a_killed_workers_late_post_is_deleted_without_a_restart(
    pg_url: str, tmp_path: Path, world: Path, fake: FakeSlackProcess
) -> None:
    migrate(pg_url)
    env = {"SIGNOFF_DATABASE_URL": pg_url, "SIGNOFF_OUTBOX_CLAIM_SECONDS": str(CLAIM)}
    workers = {
        name: start_server(tmp_path, world, fake.base_url, extra=env | {"SIGNOFF_WORKER_ID": name})
        for name in ("w-a", "w-b")
    }
    try:
        # The late post lands past every start-up sweep (each worker's start plus 4 claims):
        # only a look after the claim lapsed can find it.
        time.sleep(4 * CLAIM + 1.5 - LANDS_AFTER)
        fake.control("hang_posts", {"n": 1, "seconds": LANDS_AFTER, "lands": True})
        asked = time.monotonic()
        body = {"tool": "issue_refund", "args": {"order_id": "late-1", "amount_cents": 500},
                "approval_id": "late-1", "requested_by": REQUESTER}  # fmt: skip
        assert workers["w-a"].api("POST", "/v1/approvals", body)[0] == 201
        hung = workers["w-a"].wait_until(lambda: _posting(fake), within=10)
        poster = asyncio.run(_claimed_by(pg_url, "late-1"))
        workers[poster].kill()  # mid-post: its post hangs, and lands later
        [survivor] = [w for name, w in workers.items() if name != poster]

        [card] = survivor.wait_until(fake.cards, within=15)  # the survivor's own post
        landed_at = asked + LANDS_AFTER
        survivor.wait_until(lambda: len(fake.deleted()) == 1, within=LANDS_AFTER + 10)
        removed_within = time.monotonic() - landed_at
        [deleted] = fake.deleted()
        assert float(deleted["ts"]) > float(card["ts"])  # the younger one, the dead worker's
        assert [c["ts"] for c in fake.cards()] == [card["ts"]]
        assert approval_id_of(card) == "late-1"
        assert asyncio.run(_recorded(pg_url, "late-1")) == (APPROVALS, card["ts"])
        time.sleep(2 * CLAIM)  # and it stays so
        assert [c["ts"] for c in fake.cards()] == [card["ts"]]
        log = survivor.log.read_text()
    finally:
        for worker in workers.values():
            if worker.process.poll() is None:
                worker.kill()
    assert hung["status"] == 0
    assert removed_within < 3.0, removed_within
    assert log.count("signoff serving on") == 1  # no restart
    assert "duplicate(s) of approval_id late-1 removed" in log
    assert "Traceback" not in log


def _posting(fake: FakeSlackProcess) -> dict[str, object] | None:
    """The card post the fake holds unanswered, once it has one."""
    return next(
        (c for c in fake.calls() if c["method"] == "chat.postMessage" and c["status"] == 0),
        None,
    )


async def _claimed_by(url: str, approval_id: str) -> str:
    conn = await asyncpg.connect(url)
    try:
        owner = await conn.fetchval(
            "SELECT claimed_by FROM outbox WHERE subject_id = $1 AND topic = 'approval_requested'",
            approval_id,
        )
    finally:
        await conn.close()
    return str(owner)


async def _recorded(url: str, approval_id: str) -> tuple[str, str]:
    conn = await asyncpg.connect(url)
    try:
        row = await conn.fetchrow(
            "SELECT channel, message_ts FROM approvals WHERE id = $1", approval_id
        )
    finally:
        await conn.close()
    return row["channel"], row["message_ts"]
