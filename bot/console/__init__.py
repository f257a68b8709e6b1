"""The run console: a page to look at runs rather than read tables (their steps, spend,
effects, approvals and pages) and to fork, roll back, cancel or resume them.

`mount(app)` adds its JSON under /v1/console/ (behind the HTTP API's bearer token, like the
rest of /v1/) and its static page at /console/ (plain HTML, JS and CSS shipped with Signoff:
no build step, nothing fetched from elsewhere; the page asks for the token).
"""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from bot.console import routes

STATIC = Path(__file__).parent / "static"


def mount(
    app: web.Application,
    *,
    people: routes.People | None = None,
) -> None:
    """`people`: who the ids on runs are (names for the page); without it ids are shown.
    Who may read or operate which run is the runtime's permission table."""
    if people is not None:
        app[routes.PEOPLE] = people
    routes.add_routes(app)
    app.router.add_get("/console", _to_console)
    app.router.add_get("/console/", _index)
    app.router.add_static("/console/static/", STATIC, show_index=False)


async def _to_console(request: web.Request) -> web.StreamResponse:
    raise web.HTTPFound("/console/")


async def _index(request: web.Request) -> web.StreamResponse:
    return web.FileResponse(STATIC / "console.html", headers=NO_STORE)


NO_STORE = {"Cache-Control": "no-store"}
