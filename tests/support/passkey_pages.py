"""Approvals pages in the test's process, each on a runtime of its own over one database (as
two `signoff serve` processes behind one address would be), with a person signed in through
a real OpenID Connect provider and a passkey in software (`support.soft_passkey`)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
from aiohttp import web
from pydantic import SecretStr

from bot import approvers
from bot.settings import WebSettings
from bot.tasks import Background
from runtime import Policies
from runtime import Runtime
from store import open_store

from .approvers_support import CLIENT_ID
from .approvers_support import CLIENT_SECRET
from .approvers_support import PEOPLE_MAP
from .approvers_support import SESSION_SECRET
from .helpers import free_port
from .soft_passkey import SoftPasskey


@dataclass
class PageApp:
    """One instance: its runtime, and where its page listens."""

    rt: Runtime
    base: str
    background: Background


@asynccontextmanager
async def page_apps(
    db_url: str, issuer: str, policies: Policies, *, count: int = 2
) -> AsyncIterator[list[PageApp]]:
    """`count` instances over `db_url`, all saying they are the first one's address (the
    public_url a load balancer would stand for): the first one is where the provider sends
    people back."""
    ports = [free_port() for _ in range(count)]
    public = f"http://localhost:{ports[0]}"
    settings = WebSettings(
        public_url=public,
        oidc_issuer=issuer,
        oidc_client_id=CLIENT_ID,
        oidc_client_secret=SecretStr(CLIENT_SECRET),
        session_secret=SecretStr(SESSION_SECRET),
        people=PEOPLE_MAP,
    )
    async with AsyncExitStack() as stack:
        apps = []
        for port in ports:
            store = await open_store(db_url)
            stack.push_async_callback(store.close)
            rt = Runtime(store, [], policies=policies)
            background = Background()
            stack.push_async_callback(background.drain)
            app = web.Application()
            approvers.mount(app, rt, settings, background)
            runner = web.AppRunner(app)
            await runner.setup()
            stack.push_async_callback(runner.cleanup)
            await web.TCPSite(runner, "127.0.0.1", port).start()
            apps.append(PageApp(rt, f"http://localhost:{port}", background))
        yield apps


async def sign_in(client: httpx.AsyncClient, base: str, email: str) -> None:
    """Sign `client` in as `email` through the provider's own form (the cookie it gets is
    good on every instance: they share the session secret)."""
    to_provider = await client.get(base + "/approvals/login")
    assert to_provider.status_code == 303, to_provider.text
    back = await client.post(to_provider.headers["location"], data={"sub": email})
    assert back.status_code == 302, back.text
    landed = await client.get(back.headers["location"])
    assert landed.status_code == 303, landed.text


async def csrf(client: httpx.AsyncClient, base: str) -> str:
    page = (await client.get(base + "/approvals")).text
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, page[:2000]
    return found[1]


async def ceremony(
    client: httpx.AsyncClient, url: str, token: str, body: dict[str, Any] | None = None
) -> tuple[int, dict[str, Any]]:
    """One of the page's passkey POSTs, as its script sends them."""
    answer = await client.post(url, json={"csrf": token, **(body or {})})
    return answer.status_code, answer.json()


async def register(
    client: httpx.AsyncClient,
    ask: str,
    answer_to: str,
    token: str,
    passkey: SoftPasskey,
    *,
    origin: str,
) -> None:
    """Register `passkey` for the signed-in person: the options from the page at `ask`,
    the answer sent to the page at `answer_to` (the same one, or another instance)."""
    status, said = await ceremony(client, f"{ask}/approvals/passkeys/options", token)
    assert status == 200, said
    answer = passkey.create(said["options"], origin)
    url = f"{answer_to}/approvals/passkeys"
    status, said = await ceremony(client, url, token, {"credential": answer})
    assert status == 200, said


async def approve(
    client: httpx.AsyncClient,
    ask: str,
    answer_to: str,
    token: str,
    passkey: SoftPasskey,
    approval_id: str,
    *,
    origin: str,
) -> tuple[tuple[int, dict[str, Any]], dict[str, Any]]:
    """Approve with `passkey`: the options from `ask`, the answer sent to `answer_to`.
    What the page answered, and the answer (to send again)."""
    url = f"/approvals/{approval_id}/passkey"
    status, said = await ceremony(client, ask + url + "/options", token)
    assert status == 200, said
    answer = passkey.get(said["options"], origin)
    return await ceremony(client, answer_to + url, token, {"credential": answer}), answer
