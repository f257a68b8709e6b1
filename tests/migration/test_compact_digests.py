"""Migration `compact_digests` on a database with effects: an effect's digests become their 32
raw bytes, an `asked_digest` equal to `args_digest` becomes NULL, and every record still
reads `sha256:<hex>`; the ledger finds a conflict by its digest as before. Both backends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support.migration_support import dialect_of
from support.migration_support import execute
from support.migration_support import is_sqlite
from support.migration_support import store_before
from support.pg_support import database_url

from store import Batch
from store import Checkpoint
from store import Effect
from store import Reversibility
from store import Run
from store import migration
from store import open_store
from store.digest import args_digest

ARGS = {"order_id": "o-1", "amount_cents": 2500}
ASKED = {"order_id": "o-1", "amount_cents": 9900}
DIGEST, ASKED_DIGEST = args_digest(ARGS), args_digest(ASKED)
ROWS = [  # call, reversibility, args_digest, asked_digest, as a Signoff before 0030 wrote them
    ("c1", "read", DIGEST, None),
    ("c2", "irreversible", DIGEST, DIGEST),  # asked the same: NULL after
    ("c3", "irreversible", DIGEST, ASKED_DIGEST),  # an approver's edit: kept
    ("c4", "irreversible", None, None),  # from before digests were kept
    ("c5", "irreversible", "not a digest", None),  # unreadable: computed from the arguments
]


@pytest.fixture(params=["sqlite", "postgres"])
async def url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    async for url in database_url(request.param, tmp_path, "signoff_digests"):
        yield url


async def test_existing_effects_keep_their_digests_as_raw_bytes(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with store_before(url, "compact_digests", monkeypatch):
        pass
    now, args = (1.7e9, '{"order_id":"o-1","amount_cents":2500}')
    false = "0" if is_sqlite(url) else "false"
    await execute(
        url,
        "INSERT INTO runs (id, agent, task, status, budget, lineage_id, dry_run, created_at, "
        f"updated_at) VALUES ('r1', 'a', 't', 'done', '{{}}', 'r1', {false}, "
        f"{'?, ?' if is_sqlite(url) else 'to_timestamp(?), to_timestamp(?)'})",
        now,
        now,
    )
    for call, kind, digest, asked in ROWS:
        await execute(
            url,
            "INSERT INTO effects (run_id, call_id, lineage_id, step, tool, reversibility, "
            "idempotency_key, idempotent, status, started_at, args, result, args_digest, "
            f"asked_digest) VALUES ('r1', ?, 'r1', 1, 'refund', ?, ?, "
            f"{false}, 'completed', "
            f"{'?' if is_sqlite(url) else 'to_timestamp(?)'}, "
            f"{'?' if is_sqlite(url) else '?::jsonb'}, '1', ?, ?)",
            call,
            kind,
            f"key-{call}",
            now,
            args,
            digest,
            asked,
        )

    async with open_store(url) as store:
        assert await store.schema_version() == migration.latest_version(dialect_of(url))
        effects = {e.call_id: e for e in await store.list_effects("r1")}
        conflict = await store.conflicting_effect("key-c2", ASKED_DIGEST)
        same = await store.conflicting_effect("key-c2", DIGEST)

    assert {call: (e.args_digest, e.asked_digest) for call, e in effects.items()} == {
        "c1": (DIGEST, None),
        "c2": (DIGEST, None),
        "c3": (DIGEST, ASKED_DIGEST),
        "c4": (DIGEST, None),
        "c5": (DIGEST, None),
    }
    assert effects["c3"].repeated_by(ASKED_DIGEST)
    assert effects["c2"].repeated_by(DIGEST)
    assert conflict is not None
    assert conflict.call_id == "c2"  # found by its packed digest
    assert same is None
    stored = dict(
        (call, (bytes(d) if d is not None else None, bytes(a) if a is not None else None))
        for call, d, a in await execute(
            url, "SELECT call_id, args_digest, asked_digest FROM effects ORDER BY call_id"
        )
    )
    raw = bytes.fromhex(DIGEST.removeprefix("sha256:"))
    assert stored == {
        "c1": (raw, None),
        "c2": (raw, None),
        "c3": (raw, bytes.fromhex(ASKED_DIGEST.removeprefix("sha256:"))),
        "c4": (None, None),
        "c5": (None, None),
    }


async def test_a_new_effect_stores_32_bytes_and_no_asked_digest_when_the_same(url: str) -> None:
    async with open_store(url) as store:
        await store.create_run(
            Run(id="r1", agent="a", task="t", lineage_id="r1"), Checkpoint.opening("r1", [])
        )
        for call, asked in (("c1", DIGEST), ("c2", ASKED_DIGEST)):
            effect = Effect(
                run_id="r1", call_id=call, lineage_id="r1", step=1, tool="refund",
                reversibility=Reversibility.IRREVERSIBLE, idempotency_key=f"key-{call}",
                args=ARGS, asked_digest=asked,
            )  # fmt: skip
            await store.commit(Batch(run_id="r1", start=[effect]))
        effects = {e.call_id: e for e in await store.list_effects("r1")}
    rows = await execute(url, "SELECT call_id, args_digest, asked_digest FROM effects ORDER BY 1")
    assert [(c, len(bytes(d)), a if a is None else len(bytes(a))) for c, d, a in rows] == [
        ("c1", 32, None),
        ("c2", 32, 32),
    ]
    assert (effects["c1"].digest, effects["c1"].asked_digest) == (DIGEST, None)
    assert effects["c2"].asked_digest == ASKED_DIGEST
