"""Fixtures for the hosted-model tests: a fake provider on 127.0.0.1 (port 0) per test, the
real SDK pointed at it with its key from the environment, and its backoff made short (its
retry logic, `Retry-After` included, is the SDK's own)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestServer

from runtime.models import AnthropicModel
from runtime.models import OpenAIModel
from runtime.models.hosted import HostedModel

from .fake_provider import KEY
from .fake_provider import Brain
from .fake_provider import FakeProvider

PROVIDERS = ["openai", "anthropic"]


@pytest.fixture(autouse=True)
def provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # The SDKs are imported here, not at the top: importing them costs every pytest process
    # seconds at collection, also where no hosted-model test is run.
    import anthropic._base_client
    import openai._base_client

    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    for module in (openai._base_client, anthropic._base_client):
        monkeypatch.setattr(module, "INITIAL_RETRY_DELAY", 0.01)
        monkeypatch.setattr(module, "MAX_RETRY_DELAY", 0.05)


@pytest.fixture(params=PROVIDERS)
def kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
async def serve(kind: str) -> AsyncIterator[Callable[..., Any]]:
    """Start a fake of the test's provider; returns it and the base URL its SDK takes."""
    servers: list[TestServer] = []

    async def start(brain: Brain) -> tuple[FakeProvider, str]:
        fake = FakeProvider(kind, brain)
        server = TestServer(fake.app(), host="127.0.0.1", port=0)
        await server.start_server()
        servers.append(server)
        root = str(server.make_url("")).rstrip("/")
        return fake, f"{root}/v1" if kind == "openai" else root

    yield start
    for server in servers:
        await server.close()


OPENED: list[HostedModel] = []


@pytest.fixture(autouse=True)
async def close_models() -> AsyncIterator[None]:
    yield
    while OPENED:
        await OPENED.pop().close()


def model_for(kind: str, base_url: str, **options: Any) -> HostedModel:
    """A model of the provider on the fake; closed when the test ends."""
    model_class = OpenAIModel if kind == "openai" else AnthropicModel
    name = "gpt-5.5" if kind == "openai" else "claude-sonnet-5"
    model = model_class(name, base_url=base_url, **options)
    OPENED.append(model)
    return model
