"""The console's approval rules, under /v1/console/rules: the file's rules and the learned
ones ("approve + similar") together, as `signoff policy list` and `/runs rules` show them."""

from __future__ import annotations

from aiohttp import web

from bot.http_auth import requires
from bot.http_keys import RUNTIME
from bot.rule_views import all_rules


@requires("runs:read")
async def list_rules(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    rows = all_rules(rt.policies, await rt.rules.list(), rt.clock())
    return web.json_response({"rules": rows})
