"""What the surfaces of a worker that stepped aside for a newer schema do
(`runtime.runs.aside`): every request that would write is answered 503 with `Retry-After`
(reads go on, as far as this Signoff's records read the rows), a row it cannot read is 503
too, and its periodic jobs rest."""

from __future__ import annotations

from collections.abc import Awaitable
from collections.abc import Callable

from aiohttp import web
from aiohttp.typedefs import Middleware

from bot import words
from bot.http_auth import Handler
from bot.http_auth import error
from runtime.runs import RETRY_AFTER
from runtime.runs import Aside

READS = frozenset({"GET", "HEAD", "OPTIONS"})
KIND = "SchemaTooNew"


def refused(aside: Aside) -> web.Response:
    return error(
        503,
        words.stepped_aside(aside.found, aside.supported),
        kind=KIND,
        headers={"Retry-After": str(RETRY_AFTER)},
    )


def refuse_writes(aside: Aside) -> Middleware:
    """Once the worker stepped aside, 503 (with `Retry-After`) to every request that would
    write: the API's, the console's, Slack's."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if aside.active and request.method not in READS:
            return refused(aside)
        return await handler(request)

    return middleware


def unless_aside(
    aside: Aside, job: Callable[[], Awaitable[object]]
) -> Callable[[], Awaitable[object]]:
    """A periodic job that does nothing once the worker stepped aside."""

    async def run() -> object:
        return None if aside.active else await job()

    return run
