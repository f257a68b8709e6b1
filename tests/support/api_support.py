"""Serving the HTTP API with scoped tokens, a callback allowlist and a fake DNS, for the tests
of the API's trust model (no test reaches a real resolver or the network)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from aiohttp.test_utils import TestClient
from aiohttp.test_utils import TestServer

from bot.api import api_app
from bot.callback_policy import CallbackPolicy
from bot.sections import ApiToken
from bot.tasks import Background
from runtime import Runtime
from store import Store

from .helpers import TOKEN
from .helpers import Api
from .openapi_check import watch

PAGE_SECRET = "test"
TOKENS_TOML = f"""\
api_rate_per_minute = 120
callback_allowed_hosts = ["hooks.example.com", ".corp.example", "http://127.0.0.1"]

[api_tokens.refund-agent]
scopes = ["runs:write", "runs:read", "approvals:request"]
secret_env = "REFUND_AGENT_TOKEN"

[api_tokens.approvals-page]
scopes = ["approvals:decide"]
sha256 = "{hashlib.sha256(PAGE_SECRET.encode()).hexdigest()}"
rate_per_minute = 30
"""
"""A `signoff.toml` with two API tokens: the agent's, its secret read from REFUND_AGENT_TOKEN,
and the approvals page's, held as the hash of PAGE_SECRET."""


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def token(secret: str, *scopes: str, **options: Any) -> ApiToken:
    """A token as settings hold it: the hash of `secret`, never the secret."""
    digest = hashlib.sha256(secret.encode()).hexdigest()
    return ApiToken.model_validate({"scopes": scopes, "sha256": digest, **options})


@dataclass
class FakeDns:
    """Answers from a table; a host may have a list of answers, one per lookup (the last one
    repeats), so a name can change its address between the request and the send."""

    answers: dict[str, list[list[str]]] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)

    def set(self, host: str, *answers: list[str]) -> None:
        self.answers[host] = list(answers)

    async def resolve(self, host: str) -> list[str]:
        self.asked.append(host)
        answers = self.answers.get(host)
        if not answers:
            raise OSError(f"fake DNS: no such host {host}")
        return answers.pop(0) if len(answers) > 1 else answers[0]


def allowing(entries: Iterable[str], dns: FakeDns | None = None) -> CallbackPolicy:
    return CallbackPolicy(entries, resolve=(dns or FakeDns()).resolve)


LOOPBACK = allowing(["http://127.0.0.1"])
"""The test receivers listen on 127.0.0.1 over http: allowed only because it is listed."""


class ApiServers:
    """Starts APIs over real HTTP on free localhost ports; `close` stops them all."""

    def __init__(self, make_runtime: Callable[..., Runtime], store: Store, **defaults: Any):
        self.make_runtime = make_runtime
        self.store = store
        self.defaults = {"token": TOKEN, **defaults}
        self.started: list[Api] = []

    async def start(self, background: Background | None = None, **options: Any) -> Api:
        """`token`, `tokens`, `callbacks`, `rate_per_minute` go to the API; anything else
        to the Runtime."""
        names = ("token", "tokens", "callbacks", "rate_per_minute")
        chosen = self.defaults | {k: v for k, v in options.items() if k in names}
        runtime_options = {k: v for k, v in options.items() if k not in names}
        rt = self.make_runtime(**runtime_options)
        background = background or Background()
        app = watch(api_app(rt, background=background, **chosen))
        client = TestClient(TestServer(app))
        await client.start_server()
        self.started.append(Api(client, rt, background, self.store))
        return self.started[-1]

    async def close(self) -> None:
        for api in self.started:
            await api.background.drain()
            await api.client.close()
