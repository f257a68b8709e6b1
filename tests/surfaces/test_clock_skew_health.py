"""A process whose clock is minutes off the database's says so where an operator looks: the
`signoff_clock_skew_seconds` gauge at `/metrics`, and `/readyz` 503 `clock_skew` once the skew
passes a quarter of the lease (then 200 again when the clock is put right). Real HTTP to the
same routes `signoff serve` mounts."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from aiohttp.test_utils import TestServer
from prometheus_client.parser import text_string_to_metric_families

from bot import health
from bot.metrics import CLOCK_SKEW
from runtime.queries import Queries
from runtime.runs.skew import ClockSkew
from store import Store
from store import open_store

LEASE = 30.0


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Store]:
    async with open_store(f"sqlite:///{tmp_path / 'signoff.db'}") as store:
        yield store


def gauge(text: str) -> float:
    for family in text_string_to_metric_families(text):
        if family.name == "signoff_clock_skew_seconds":
            return float(family.samples[0].value)
    raise AssertionError("no signoff_clock_skew_seconds at /metrics")


async def test_a_skewed_clock_is_exported_and_makes_the_process_not_ready(db: Store) -> None:
    offset = [timedelta(minutes=5)]
    skew = ClockSkew(
        db, lambda: datetime.now(UTC) + offset[0], unready_at=LEASE / 4, report=CLOCK_SKEW.set
    )
    app = web.Application()
    health.mount(app, health.Readiness(Queries(db), {}, {"clock_skew": skew.problem}))
    async with TestClient(TestServer(app)) as client:
        await skew.measure()
        ready = await client.get("/readyz")
        metrics = await (await client.get("/metrics")).text()
        assert (ready.status, await ready.json()) == (
            503,
            {"ready": False, "failing": ["clock_skew"]},
        )
        assert 298 < gauge(metrics) < 302

        offset[0] = timedelta(0)
        await skew.measure()
        ready = await client.get("/readyz")
        metrics = await (await client.get("/metrics")).text()
        assert (ready.status, await ready.json()) == (200, {"ready": True})
        assert abs(gauge(metrics)) < 2
