"""A scrape while the database does not answer fails visibly, as JSON like every error."""

from __future__ import annotations

import json
from pathlib import Path

from aiohttp.test_utils import make_mocked_request

from bot.metrics import metrics_handler
from runtime.queries import Queries
from store import open_store


async def test_a_scrape_the_database_cannot_answer_is_a_503_in_json(tmp_path: Path) -> None:
    store = await open_store(f"sqlite:///{tmp_path / 'signoff.db'}")
    handler = metrics_handler(Queries(store))
    answer = await handler(make_mocked_request("GET", "/metrics"))
    assert answer.status == 200
    assert b"signoff_approvals_pending 0.0" in answer.body
    await store.close()

    answer = await handler(make_mocked_request("GET", "/metrics"))
    assert answer.status == 503
    assert json.loads(answer.body) == {"error": "the database did not answer"}
