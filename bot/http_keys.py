"""What the HTTP handlers (the API's and the console's) find on the aiohttp application: the
runtime and the background tasks. A leaf module, so handlers in several modules share the
keys without a cycle."""

from __future__ import annotations

from aiohttp import web

from bot.tasks import Background
from runtime import Runtime

RUNTIME = web.AppKey("runtime", Runtime)
BACKGROUND = web.AppKey("background", Background)
