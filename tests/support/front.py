"""A front between a client and the API, for the client's tests: it forwards every request
to the API over real HTTP and lets a test change what the client hears back (lose an
answer, hold it back)."""

from __future__ import annotations

from aiohttp import ClientSession
from aiohttp import web

from .helpers import free_port


class Front:
    """Forwards each request to `upstream`; `answer` says what the client gets for it (by
    default, what the API answered)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"

    async def answer(self, request: web.Request, status: int, body: bytes) -> web.Response:
        return web.Response(status=status, body=body, content_type="application/json")

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() != "host"}
        async with (
            ClientSession() as session,
            session.request(
                request.method, self.upstream + request.path_qs, data=body or None, headers=headers
            ) as answer,
        ):
            text = await answer.read()
        return await self.answer(request, answer.status, text)

    async def start(self) -> web.AppRunner:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", self.port).start()
        return runner
