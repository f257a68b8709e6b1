"""Fixtures for the end-to-end tests: real SQLite files, a real aiohttp server on a free port,
the refund agent acting on a throwaway world."""

from __future__ import annotations

from collections.abc import AsyncIterator
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from aiohttp.test_utils import TestServer
from support.helpers import TOKEN
from support.helpers import Api
from support.openapi_check import VIOLATIONS
from support.openapi_check import watch
from support.slack_harness import FakeSlackProcess
from support.slack_harness import SlackServer
from support.slack_harness import start_server

from bot.api import api_app
from bot.tasks import Background
from examples.refund_agent import agent as refund_agent
from runtime import Agent
from runtime import Runtime
from store import Store
from store import open_store


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "signoff.db"


@pytest.fixture
def db_url(db_path: Path) -> str:
    return f"sqlite:///{db_path}"


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    """A migrated store on a real SQLite file (overrides the parametrized root fixture)."""
    opened = await open_store(db_url)
    yield opened
    await opened.close()


@pytest.fixture
def make_runtime(store: Store, world: Path) -> Callable[..., Runtime]:
    """A Runtime with the refund agent on the test's store and world."""

    def make(agents: Iterable[Agent] = (refund_agent,), **options: Any) -> Runtime:
        options.setdefault("worker_id", "e2e-worker")
        return Runtime(store, agents, **options)

    return make


@pytest.fixture
async def make_api(
    make_runtime: Callable[..., Runtime], store: Store
) -> AsyncIterator[Callable[..., Awaitable[Api]]]:
    """Serve the HTTP API of a fresh Runtime on a free localhost port, over real HTTP."""
    started: list[Api] = []

    async def make(background: Background | None = None, **options: Any) -> Api:
        rt = make_runtime(**options)
        background = background or Background()
        app = watch(api_app(rt, token=TOKEN, background=background))
        client = TestClient(TestServer(app))
        await client.start_server()
        started.append(Api(client, rt, background, store))
        return started[-1]

    yield make
    for api in started:
        await api.background.drain()
        await api.client.close()


@pytest.fixture
async def api(make_api: Callable[..., Awaitable[Api]]) -> Api:
    return await make_api()


@pytest.fixture(autouse=True)
def answers_match_the_openapi_document() -> Iterator[None]:
    """Every /v1 answer a test's API gave matches docs/openapi.json (`openapi_check`)."""
    VIOLATIONS.clear()
    yield
    found, VIOLATIONS[:] = list(VIOLATIONS), []
    assert not found, "answers that do not match the OpenAPI document:\n" + "\n".join(found)


@pytest.fixture
def server(tmp_path: Path, world: Path, fake: FakeSlackProcess) -> Iterator[SlackServer]:
    """`signoff serve` as a real process against the fake Slack (a module may override it)."""
    with start_server(tmp_path, world, fake.base_url) as running:
        yield running
