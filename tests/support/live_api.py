"""The HTTP API served for real on a free localhost port from its own thread and event loop,
for callers that block (schemathesis, the synchronous client): they talk to it over TCP while
the test's code reaches its runtime through `call`."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Coroutine
from collections.abc import Iterable
from concurrent.futures import Future
from typing import Any
from typing import TypeVar

from aiohttp import web

from bot.api import api_app
from bot.tasks import Background
from examples.refund_agent import agent as refund_agent
from runtime import Agent
from runtime import Runtime
from store import Store
from store import open_store

from .helpers import TOKEN
from .helpers import free_port
from .openapi_check import watch

T = TypeVar("T")


class LiveApi:
    """Start with `start()`, stop with `stop()`; `url` is where it listens."""

    def __init__(
        self,
        db_url: str,
        agents: Iterable[Agent] = (refund_agent,),
        configure: Callable[[Runtime], None] | None = None,
        **runtime_options: Any,
    ) -> None:
        self.db_url = db_url
        self.agents = list(agents)
        self.configure = configure
        self.runtime_options = runtime_options
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.store: Store
        self.rt: Runtime
        self.background: Background
        self._runner: web.AppRunner

    def call(self, work: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        """Run `work` on the server's loop and wait for its result."""
        future: Future[T] = asyncio.run_coroutine_threadsafe(work, self.loop)
        return future.result(timeout)

    def start(self) -> LiveApi:
        self._thread.start()
        self.call(self._start())
        return self

    def stop(self) -> None:
        self.call(self._stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()

    async def _start(self) -> None:
        self.store = await open_store(self.db_url)
        self.runtime_options.setdefault("worker_id", "live-api")
        self.rt = Runtime(self.store, self.agents, **self.runtime_options)
        if self.configure is not None:
            self.configure(self.rt)
        self.background = Background()
        app = watch(api_app(self.rt, token=TOKEN, background=self.background))
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    async def _stop(self) -> None:
        await self.background.drain()
        await self._runner.cleanup()
        await self.store.close()

    def run(self, make: Callable[[], Awaitable[T]]) -> T:
        async def wrapped() -> T:
            return await make()

        return self.call(wrapped())
